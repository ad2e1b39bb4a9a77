//! Unit tests of `transfer/error.rs`.

use super::*;

#[test]
fn error_details_match_the_reference() {
    assert_eq!(
        TransferError::DestinationNotAbsolute.to_string(),
        "400: Destination must be an absolute path"
    );
    assert_eq!(
        TransferError::RecursiveNotZip.to_string(),
        "400: Recursive uploads must be zip files"
    );
    assert_eq!(
        TransferError::PathNotAbsolute.to_string(),
        "400: Path must be an absolute path"
    );
    assert_eq!(TransferError::NotFound.to_string(), "404: File not found");
    let os = io::Error::from_raw_os_error(13);
    assert_eq!(
        TransferError::Io(os).to_string(),
        "Permission denied (os error 13)"
    );
}

//! Unit tests of `serve/images.rs`.

use super::*;

#[test]
fn mapped_and_unnamed_images_need_no_engine() {
    let config = ServeConfig {
        default_image: "base:default".to_string(),
        images: BTreeMap::from([("caller/app:1".to_string(), "local:app".to_string())]),
        ..ServeConfig::default()
    };
    let images = SandboxImages::new(&config);
    assert_eq!(images.configured("caller/app:1"), Some("local:app"));
    assert_eq!(images.configured(""), Some("base:default"));
    assert_eq!(images.configured("caller/other:1"), None);
}

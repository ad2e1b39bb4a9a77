//! Uploads, downloads and listings through the real daemon (docs/protocol.md §8).

use std::io::Write;

use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::common::*;

async fn upload(
    sb: &Sandbox,
    dest: &str,
    recursive: bool,
    name: &str,
    data: Vec<u8>,
) -> (u16, Value) {
    let form = Form::new().part("file", Part::bytes(data).file_name(name.to_owned()));
    let resp = sb
        .request(
            Method::POST,
            &format!("/upload_file?destination={dest}&recursive={recursive}"),
        )
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

/// `GET /download_files?path=PATH`.
async fn download(sb: &Sandbox, path: &str) -> reqwest::Response {
    sb.request(Method::GET, &format!("/download_files?path={path}"))
        .send()
        .await
        .unwrap()
}

fn zip_of(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut buf);
    for (name, text) in entries {
        zip.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    buf.into_inner()
}

#[tokio::test]
async fn uploads_downloads_and_listings() {
    let sb = Sandbox::start().await;
    let ws = sb.ws_str();

    let (status, body) = upload(&sb, &format!("{ws}/up"), false, "u.txt", b"hello".to_vec()).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"filename": "u.txt", "destination": format!("{ws}/up"), "recursive": false})
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("up/u.txt")).unwrap(),
        "hello"
    );

    let zip = zip_of(&[("d/a.txt", "A"), ("d/sub/b.txt", "B")]);
    let (status, body) = upload(&sb, &format!("{ws}/up2"), true, "d.zip", zip).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("up2/d/sub/b.txt")).unwrap(),
        "B"
    );
    assert!(!sb.ws.join("up2/d.zip").exists());

    let (status, body) = upload(&sb, "relative/dir", false, "u.txt", b"x".to_vec()).await;
    assert_eq!(
        (status, body),
        (
            500,
            json!({"detail": "400: Destination must be an absolute path"})
        )
    );
    let (status, body) = upload(&sb, &format!("{ws}/x"), true, "notzip.txt", b"x".to_vec()).await;
    assert_eq!(
        (status, body),
        (
            500,
            json!({"detail": "400: Recursive uploads must be zip files"})
        )
    );
    // Zip slip is refused and writes nothing outside the destination.
    let evil = zip_of(&[("../escaped.txt", "gotcha")]);
    let (status, _) = upload(&sb, &format!("{ws}/up3"), true, "evil.zip", evil).await;
    assert_eq!(status, 500);
    assert!(!sb.ws.join("escaped.txt").exists());

    let resp = download(&sb, &format!("{ws}/up2")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/zip");
    assert_eq!(
        resp.headers()["content-disposition"],
        "attachment; filename=\"up2.zip\""
    );
    let bytes = resp.bytes().await.unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    let mut names: Vec<String> = (0..archive.len())
        .map(|i| archive.by_index(i).unwrap().name().unwrap().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["d/a.txt", "d/sub/b.txt"]);
    let mut text = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("d/a.txt").unwrap(), &mut text).unwrap();
    assert_eq!(text, "A");
    for (path, detail) in [
        (format!("{ws}/missing"), "404: File not found"),
        ("rel".to_owned(), "400: Path must be an absolute path"),
    ] {
        let resp = download(&sb, &path).await;
        assert_eq!(resp.status(), 500);
        assert_eq!(
            resp.json::<Value>().await.unwrap(),
            json!({"detail": detail})
        );
    }

    std::fs::write(sb.ws.join(".hidden"), "").unwrap();
    std::fs::write(sb.ws.join("B.txt"), "").unwrap();
    std::fs::write(sb.ws.join("a.txt"), "").unwrap();
    let (_, names) = sb.post_json("/list_files", &json!({})).await;
    assert_eq!(
        names,
        json!(["up/", "up2/", "up3/", ".hidden", "a.txt", "B.txt"])
    );
    let (_, names) = sb.post_json("/list_files", &json!({"path": "up2/d"})).await;
    assert_eq!(names, json!(["sub/", "a.txt"]));
    let (_, names) = sb
        .post_json("/list_files", &json!({"path": "/nonexistent"}))
        .await;
    assert_eq!(names, json!([]));
    let (status, names) = sb.post_json("/list_files", &json!("not an object")).await;
    assert_eq!((status, names), (200, json!([])));
}

#[tokio::test]
async fn a_large_upload_is_streamed_to_disk_not_held_in_memory() {
    const MB: usize = 1024 * 1024;
    let sb = Sandbox::start().await;
    let ws = sb.ws_str();
    // 300 MB made on the fly, a megabyte at a time, on the test's side too.
    let chunks = futures_util::stream::iter(
        (0..300).map(|i| Ok::<_, std::io::Error>(vec![(i % 251) as u8; MB])),
    );
    let part = Part::stream_with_length(reqwest::Body::wrap_stream(chunks), 300 * MB as u64)
        .file_name("big.bin");
    let resp = sb
        .request(Method::POST, &format!("/upload_file?destination={ws}/big"))
        .multipart(Form::new().part("file", part))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{:?}", resp.text().await);
    let meta = std::fs::metadata(sb.ws.join("big/big.bin")).unwrap();
    assert_eq!(meta.len(), 300 * MB as u64);
    // sandboxd's peak resident memory stayed far below the upload's size.
    let status = std::fs::read_to_string(format!("/proc/{}/status", sb.pid())).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(
        peak_kb < 100 * 1024,
        "peak RSS {peak_kb} kB for a 300 MB upload"
    );
    // Nothing but the file is left in the destination (the spool had no name).
    let names: Vec<_> = std::fs::read_dir(sb.ws.join("big"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["big.bin"]);
}

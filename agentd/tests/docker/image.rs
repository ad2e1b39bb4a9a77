//! Bring your own image: a base without our user becomes a sandbox image in one thin layer,
//! which is reused on the next call.

use std::collections::HashMap;

use agentd::docker::DockerHost;
use agentd::docker::{self as image, ContextFile, ensure_sandbox_image, is_sandbox_image};

use crate::common::{Running, base_image, sandboxd_binary};

#[tokio::test]
async fn a_base_without_our_user_becomes_a_sandbox_image_once() {
    let docker = DockerHost::connect().unwrap();
    // A "new" base: no openhands user, no sudoers entry, a unique label so its id is new.
    let base = format!("sandboxd-test-base:{}", std::process::id());
    let dockerfile = format!(
        "FROM {}\nRUN userdel -r openhands && rm -f /etc/sudoers.d/openhands && rm -rf /workspace\nLABEL test.run=\"{base}\"\n",
        base_image()
    );
    let context = [ContextFile::new("Dockerfile", dockerfile.as_bytes(), 0o644)];
    image::build(docker.docker(), &base, &context, &HashMap::new(), |_| {})
        .await
        .unwrap();
    assert!(!is_sandbox_image(docker.docker(), &base).await.unwrap());

    let mut lines = 0;
    let first = ensure_sandbox_image(docker.docker(), &base, &sandboxd_binary(), |_| lines += 1)
        .await
        .unwrap();
    assert!(first.built);
    assert!(lines > 0, "no progress was reported");
    println!("sandbox image from a new base built in {:?}", first.elapsed);
    assert!(is_sandbox_image(docker.docker(), &first.tag).await.unwrap());
    // One layer on the base, whose configuration it keeps; and no container left of making it.
    let [made, of] = [&first.tag, &base].map(|image| inspect(image));
    assert_eq!(
        made["RootFS"]["Layers"].as_array().unwrap().len(),
        of["RootFS"]["Layers"].as_array().unwrap().len() + 1
    );
    for key in ["Cmd", "Env", "WorkingDir", "Entrypoint"] {
        assert_eq!(made["Config"][key], of["Config"][key], "{key}");
    }
    let labels = &made["Config"]["Labels"];
    assert_eq!(labels["test.run"], base.as_str());
    assert_eq!(labels["dev.sandboxd.base"], base.as_str());
    assert!(labels["dev.sandboxd.version"].is_string(), "{labels}");
    assert!(labels.get("dev.sandboxd.scratch").is_none(), "{labels}");
    let leftovers = std::process::Command::new("docker")
        .args(["ps", "-aq", "--filter", "name=^/sandboxd-layer-"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&leftovers.stdout).trim(), "");

    let again = ensure_sandbox_image(docker.docker(), &base, &sandboxd_binary(), |_| {})
        .await
        .unwrap();
    assert_eq!(
        (again.tag.as_str(), again.built),
        (first.tag.as_str(), false)
    );

    let sandbox = Running::with(|c| c.image = first.tag.clone()).await;
    let (code, out) = sandbox
        .sh("id -u -n && pwd && test -w /workspace && echo ok")
        .await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.trim(), "openhands\n/workspace\nok");
    let (code, out) = sandbox
        .sh("stat -c '%a %U' /opt/sandboxd/bin/sandboxd /usr/local/bin/sudo")
        .await;
    assert_eq!((code, out.trim()), (0, "755 root\n755 root"));
    drop(sandbox);

    for image in [&first.tag, &base] {
        let _ = std::process::Command::new("docker")
            .args(["rmi", "-f", image])
            .output();
    }
}

/// `docker image inspect`'s answer for `image`.
fn inspect(image: &str) -> serde_json::Value {
    let out = std::process::Command::new("docker")
        .args(["image", "inspect", image])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    all[0].clone()
}

#[tokio::test]
async fn a_missing_base_is_a_clear_error() {
    let docker = DockerHost::connect().unwrap();
    let err = ensure_sandbox_image(
        docker.docker(),
        "sandboxd-no-such-base:1",
        &sandboxd_binary(),
        |_| {},
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("images/base/build.sh"), "{err}");
}

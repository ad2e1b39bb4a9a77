//! What browser tests share: the test site (`sandboxd/tests/fixtures/site`: a form page, a
//! second page, and `serve.py`, which serves the directory it is in on a free port of
//! 127.0.0.1 and writes the port to `port`), and reading an element's bid in the text of
//! sandboxd's accessibility tree.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The test site's directory.
pub const SITE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../sandboxd/tests/fixtures/site"
);

/// Copies the test site's files into `dir` (to be served from there, or uploaded).
pub fn copy_site(dir: &Path) {
    for file in ["index.html", "second.html", "serve.py"] {
        let from = Path::new(SITE_DIR).join(file);
        std::fs::copy(&from, dir.join(file))
            .unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
    }
}

/// The test site served on this host from a copy in `dir`; its server is killed on drop.
#[derive(Debug)]
pub struct Site {
    server: Child,
    url: String,
}

impl Site {
    /// Copies the site into `dir` and serves it; returns once it listens (within 10 s).
    pub async fn serve(dir: &Path) -> Site {
        copy_site(dir);
        let server = Command::new("python3")
            .arg("serve.py")
            .current_dir(dir)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the site's server: {e}"));
        // Killed if it does not start in time.
        let mut site = Site {
            server,
            url: String::new(),
        };
        let port_file = dir.join("port");
        let started = Instant::now();
        while !port_file.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the site's server did not start"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let port = std::fs::read_to_string(&port_file)
            .unwrap_or_else(|e| panic!("cannot read the site's port: {e}"));
        site.url = format!("http://127.0.0.1:{}", port.trim());
        site
    }

    /// `http://127.0.0.1:PORT`, the site's base URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// The bid of the first line of `tree` (an accessibility tree as sandboxd writes it, a line
/// like `[12] textbox 'Name'` per element) that contains `what`; panics when none does.
pub fn bid_of(tree: &str, what: &str) -> String {
    let line = tree
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no {what} in\n{tree}"))
        .trim_start();
    let end = line
        .find(']')
        .unwrap_or_else(|| panic!("no bid in {line:?}"));
    line[1..end].to_owned()
}

//! Unit tests of `bash/spool.rs`: the shared budget empties old files and stops a file that
//! cannot grow, saying so.

use super::*;

fn line(n: usize) -> String {
    "x".repeat(n - 1)
}

/// Spool files in a temporary directory, sharing a budget of 1000 bytes.
struct Files {
    dir: tempfile::TempDir,
    budget: SpoolBudget,
}

impl Files {
    fn new() -> Files {
        Files {
            dir: tempfile::tempdir().unwrap(),
            budget: SpoolBudget::new(1000),
        }
    }

    fn create(&self, name: &str) -> Spool {
        Spool::create(self.dir.path().join(name), self.budget.clone())
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap()
    }
}

#[test]
fn old_ended_files_make_room_and_say_so() {
    let files = Files::new();
    let mut a = files.create("a");
    a.write_line(&line(600));
    a.close();
    let mut b = files.create("b");
    b.write_line(&line(600));
    b.close();
    assert_eq!(b.lost(), None);
    let a_text = files.read("a");
    assert!(
        a_text.contains("was removed to keep the output files within their budget of 1000 bytes"),
        "{a_text}"
    );
    assert_eq!(files.read("b").len(), 600);
}

#[test]
fn a_file_that_cannot_grow_stops_and_says_why() {
    let files = Files::new();
    // A running command's file is never emptied for another.
    let mut running = files.create("running");
    running.write_line(&line(600));
    let mut noisy = files.create("noisy");
    noisy.write_line(&line(300));
    noisy.write_line(&line(300));
    noisy.write_line(&line(10));
    assert!(
        noisy
            .lost()
            .unwrap()
            .contains("only running commands' files are left"),
        "{:?}",
        noisy.lost()
    );
    noisy.close();
    let text = files.read("noisy");
    assert!(text.ends_with("[sandboxd: output beyond this point was not kept: the output files' budget of 1000 bytes (--output-budget) is full, and only running commands' files are left in it]\n"), "{text}");
    assert_eq!(running.lost(), None);
}

#[test]
fn a_file_that_cannot_be_created_says_so() {
    let budget = SpoolBudget::new(1000);
    let spool = Spool::create(PathBuf::from("/nonexistent/dir/f"), budget);
    assert!(
        spool
            .lost()
            .unwrap()
            .starts_with("the file could not be created")
    );
}

use super::*;

fn line(n: usize) -> String {
    "x".repeat(n - 1)
}

#[test]
fn old_ended_files_make_room_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let budget = SpoolBudget::new(1000);
    let mut a = Spool::create(dir.path().join("a"), budget.clone());
    a.write_line(&line(600));
    a.close();
    let mut b = Spool::create(dir.path().join("b"), budget.clone());
    b.write_line(&line(600));
    b.close();
    assert_eq!(b.lost(), None);
    let a_text = std::fs::read_to_string(dir.path().join("a")).unwrap();
    assert!(
        a_text.contains("was removed to keep the output files within their budget of 1000 bytes"),
        "{a_text}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b")).unwrap().len(),
        600
    );
}

#[test]
fn a_file_that_cannot_grow_stops_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let budget = SpoolBudget::new(1000);
    // A running command's file is never emptied for another.
    let mut running = Spool::create(dir.path().join("running"), budget.clone());
    running.write_line(&line(600));
    let mut noisy = Spool::create(dir.path().join("noisy"), budget.clone());
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
    let text = std::fs::read_to_string(dir.path().join("noisy")).unwrap();
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

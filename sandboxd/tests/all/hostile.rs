//! Hostile inputs: spoofed markers, binary floods, huge output, stubborn programs, load.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn printed_markers_cannot_end_a_command() {
    let sb = Sandbox::start().await;
    // A marker of another session, the reference's PS1 marker, and our raw PS1 text.
    let obs = sb
        .run("printf '\\033_sbx0123456789abcdef0123456789abcdefE0\\037\\037u\\037h\\037/\\037/bin\\033\\\\' ; echo '###PS1JSON###'; echo \"$PS1\" > /dev/null; sleep 0.2; echo after")
        .await;
    assert_eq!(exit_code(&obs), 0);
    assert!(content(&obs).ends_with("###PS1JSON###\nafter"), "{obs}");
}

#[tokio::test]
async fn binary_output_and_fifty_megabytes() {
    let sb = Sandbox::start().await;
    let obs = sb.run("head -c 200000 /dev/urandom").await;
    assert_eq!(exit_code(&obs), 0);
    assert!(content(&obs).chars().count() <= 30_047);
    let start = Instant::now();
    let obs = sb
        .run("yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 50000000")
        .await;
    let took = start.elapsed();
    assert_eq!(exit_code(&obs), 0, "{obs}");
    assert_eq!(content(&obs).chars().count(), 30_047);
    let path = obs["extras"]["full_output_path"].as_str().unwrap();
    // The output file is line based: the unterminated last line gets its newline.
    assert_eq!(std::fs::metadata(path).unwrap().len(), 50_000_001);
    eprintln!("50 MB of output took {took:?}");
    assert_eq!(content(&sb.run("echo ok").await), "ok");
}

#[tokio::test]
async fn a_program_that_ignores_sigint_is_still_controllable() {
    let sb = Sandbox::start().await;
    let obs = sb
        .run_hard("python3 -c \"import signal,time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)\"", 1.0)
        .await;
    assert_eq!(content(&obs), "ready");
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "C-c", "is_input": true, "blocking": true}, "timeout": 1.0}))
        .await;
    assert_eq!(exit_code(&obs), -1, "SIGINT is ignored: {obs}");
    let obs = sb.input("C-\\").await;
    assert_eq!(exit_code(&obs), 131, "{obs}");
    assert_eq!(content(&sb.run("echo ok").await), "ok");
}

#[tokio::test]
async fn file_actions_do_not_wait_behind_a_running_command() {
    let sb = Sandbox::start().await;
    std::fs::write(sb.ws.join("f.txt"), "hello\n").unwrap();
    let slow = sb.run_hard("sleep 4", 3.0);
    tokio::pin!(slow);
    let others = async {
        // Give the command a head start so that it holds the session.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let read = sb
            .act(json!({"action": "read", "args": {"path": "f.txt"}}))
            .await;
        let list = sb.post_json("/list_files", &json!({})).await;
        let dl = sb
            .request(
                Method::GET,
                &format!("/download_files?path={}", sb.ws_str()),
            )
            .send()
            .await
            .unwrap();
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(b"up".to_vec()).file_name("u.txt"),
        );
        let up = sb
            .request(
                Method::POST,
                &format!("/upload_file?destination={}&recursive=false", sb.ws_str()),
            )
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(up.status(), 200);
        let write = sb
            .act(json!({"action": "write", "args": {"path": "w.txt", "content": "w"}}))
            .await;
        assert_eq!(write["observation"], json!("write"));
        (read, list, dl.status())
    };
    let (read, list, dl) = tokio::select! {
        biased;
        _ = &mut slow => panic!("the command finished before the file actions"),
        r = others => r,
    };
    assert_eq!(read["observation"], json!("read"));
    assert_eq!(list.0, 200);
    assert_eq!(dl, 200);
    assert_eq!(exit_code(&slow.await), -1);
}

#[tokio::test]
async fn a_thousand_parallel_requests() {
    let sb = std::sync::Arc::new(Sandbox::start().await);
    std::fs::write(sb.ws.join("f.txt"), "data\n").unwrap();
    let mut tasks = Vec::new();
    for i in 0..1000 {
        let sb = sb.clone();
        tasks.push(tokio::spawn(async move {
            match i % 4 {
                0 => sb.run(&format!("echo {i}")).await["content"] == json!(i.to_string()),
                1 => {
                    sb.act(json!({"action": "read", "args": {"path": "f.txt"}}))
                        .await["content"]
                        == json!("data\n")
                }
                2 => sb.post_json("/list_files", &json!({})).await.0 == 200,
                _ => sb
                    .request(Method::GET, "/alive")
                    .send()
                    .await
                    .is_ok_and(|r| r.status() == 200),
            }
        }));
    }
    for task in tasks {
        assert!(task.await.unwrap());
    }
    assert_eq!(content(&sb.run("echo done").await), "done");
}

/// Regression: output that never pauses kept the event branch of the wait loop ready, so the
/// hard timeout was never checked and `yes` ran past its timeout forever.
#[tokio::test]
async fn endless_output_still_hits_the_hard_timeout() {
    let sb = Sandbox::start().await;
    let start = Instant::now();
    let obs = sb.run_hard("yes", 1.0).await;
    assert_eq!(exit_code(&obs), -1);
    // A 1 s timeout; generous slack for a loaded machine (the bug took 17 s here).
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "took {:?}",
        start.elapsed()
    );
    assert!(content(&obs).starts_with('y'));
    // Requests are served while it floods: file actions, and the key that stops it.
    std::fs::write(sb.ws.join("f.txt"), "x\n").unwrap();
    let read = sb
        .act(json!({"action": "read", "args": {"path": "f.txt"}}))
        .await;
    assert_eq!(read["content"], json!("x\n"));
    let obs = sb.input("C-c").await;
    assert_eq!(exit_code(&obs), 130, "{}", obs["extras"]);
    assert_eq!(content(&sb.run("echo calm").await), "calm");
}

/// Regression (issue 14.1): a `timeout` of about 9.3e18 s overflowed the deadline and killed the
/// bash actor, after which every `run` answered "the bash session has ended". Durations out of
/// range are refused with a clear error, and the session lives on.
#[tokio::test]
async fn absurd_timeouts_are_refused_and_the_session_lives_on() {
    let sb = Sandbox::start().await;
    for timeout in [json!(1e19), json!(-1), json!(1e300), json!(2_592_001)] {
        for blocking in [false, true] {
            let obs = sb
                .act(json!({"action": "run", "args": {"command": "echo never", "blocking": blocking}, "timeout": timeout}))
                .await;
            assert_eq!(obs["observation"], json!("error"), "{obs}");
            assert!(
                content(&obs).starts_with("ERROR: Invalid timeout: timeout must be a number of seconds from 0 to 2592000 (30 days); got "),
                "{obs}"
            );
        }
    }
    // A hidden command gets a `run` observation, which the client can decode.
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "echo never", "hidden": true}, "timeout": 1e19}))
        .await;
    assert_eq!(obs["observation"], json!("run"), "{obs}");
    assert_eq!(exit_code(&obs), -1);
    assert!(content(&obs).starts_with("ERROR: Invalid timeout"), "{obs}");
    let obs = sb
        .act(json!({"action": "run_ipython", "args": {"code": "1"}, "timeout": 1e19}))
        .await;
    assert_eq!(obs["observation"], json!("error"), "{obs}");
    assert!(content(&obs).starts_with("ERROR: Invalid timeout"), "{obs}");
    let obs = sb.run("echo alive").await;
    assert_eq!(content(&obs), "alive", "{obs}");
    // The longest allowed timeout is fine.
    let obs = sb.run_hard("echo long", 2_592_000.0).await;
    assert_eq!(content(&obs), "long", "{obs}");
}

/// Regression (issue 14.1): `NO_CHANGE_TIMEOUT_SECONDS` of 1e19 was accepted and the first
/// non-blocking command overflowed its deadline. It is refused at start, saying why.
#[tokio::test]
async fn an_absurd_no_change_timeout_is_refused_at_start() {
    let err = match Sandbox::try_with(Options {
        no_change_timeout: 10_000_000_000_000_000_000,
        ..Options::default()
    })
    .await
    {
        Ok(sb) => {
            let obs = sb.run("true").await;
            panic!("sandboxd started; then: {obs}");
        }
        Err(e) => e,
    };
    assert!(err.contains("NO_CHANGE_TIMEOUT_SECONDS"), "{err}");
    assert!(err.contains("2592000"), "{err}");
}

/// Regression (issue 14.1): `/alive` said 200 while no command could run. It now says 503 with
/// the reason while no shell can start, and the observation of the first command in a new shell
/// says why the shell is new.
#[tokio::test]
async fn alive_tells_when_no_shell_can_start_and_a_new_shell_says_why() {
    let sb = Sandbox::start().await;
    let alive = || testkit::status_and_text(sb.request(Method::GET, "/alive"));
    assert_eq!(alive().await.0, 200);
    // The shell's directory and the workspace go away, then the shell ends.
    std::fs::create_dir(sb.ws.join("sub")).unwrap();
    sb.run("cd sub").await;
    std::fs::remove_dir_all(&sb.ws).unwrap();
    assert_eq!(exit_code(&sb.run("exit 4").await), 4);
    let obs = sb.run("echo where").await;
    assert!(
        content(&obs).starts_with("ERROR: cannot start bash: the working directory"),
        "{obs}"
    );
    let (status, body) = alive().await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("bash cannot start"), "{body}");
    std::fs::create_dir(&sb.ws).unwrap();
    let obs = sb.run("echo back").await;
    assert_eq!(content(&obs), "back", "{obs}");
    let prefix = meta(&obs, "prefix").as_str().unwrap_or_default();
    assert!(
        prefix.starts_with(
            "[The previous bash session ended (exit status 4) and a new one was started"
        ),
        "{obs}"
    );
    assert_eq!(alive().await.0, 200);
}

/// Regression (issue 14.10a): `is_input` text longer than 4,095 bytes reached the program cut
/// to 4,096 bytes (the terminal's line limit). It is refused, saying why; a program that reads
/// the terminal raw gets it whole.
#[tokio::test]
async fn input_lines_are_delivered_whole_or_refused_never_cut() {
    let sb = Sandbox::with_no_change_timeout(1).await;
    sb.run("read -r line; echo ${#line}").await;
    let obs = sb.input(&"a".repeat(5000)).await;
    assert!(
        content(&obs).starts_with("ERROR: The input was not sent: it has a line of 5000 bytes"),
        "{obs}"
    );
    let obs = sb.input(&"b".repeat(4095)).await;
    assert_eq!(content(&obs), "4095", "{obs}");
    let obs = sb
        .run("python3 -c \"import sys, tty; tty.setcbreak(0); print('raw', flush=True); print(len(sys.stdin.readline()))\"")
        .await;
    assert_eq!(content(&obs), "raw", "{obs}");
    let obs = sb.input(&"c".repeat(9000)).await;
    assert_eq!(content(&obs), "9001", "{obs}");
}

/// Regression (issue 14.10b): a static command whose `cwd` did not exist ran in `$HOME`.
#[tokio::test]
async fn a_static_command_in_a_missing_directory_is_refused() {
    let sb = Sandbox::start().await;
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "pwd", "is_static": true, "cwd": "/no/such/dir"}, "timeout": 30}))
        .await;
    assert_eq!(obs["observation"], json!("error"), "{obs}");
    assert_eq!(
        content(&obs),
        "ERROR: The command was not run: its working directory /no/such/dir does not exist."
    );
    std::fs::write(sb.ws.join("file"), "").unwrap();
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "pwd", "is_static": true, "cwd": "file", "hidden": true}, "timeout": 30}))
        .await;
    assert_eq!(obs["observation"], json!("run"), "{obs}");
    assert!(
        content(&obs).ends_with("/file is not a directory."),
        "{obs}"
    );
    assert_eq!(exit_code(&obs), -1);
}

/// `$!` of a background job started by `command` (its last line).
async fn background_pid(sb: &Sandbox, command: &str) -> u32 {
    let obs = sb.run(command).await;
    content(&obs)
        .lines()
        .last()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn c_c_at_the_prompt_kills_the_agents_jobs_and_keeps_the_shell() {
    let sb = Sandbox::start().await;
    sb.run("cd / && export MARK=kept").await;
    let job = background_pid(&sb, "sleep 300 & echo $!").await;
    let nohup = background_pid(&sb, "nohup sleep 301 > /dev/null 2>&1 & echo $!").await;
    let obs = sb.input("C-c").await;
    assert!(
        content(&obs).contains("C-c at the prompt killed 2 processes the agent had started"),
        "{obs}"
    );
    eventually("both jobs to be gone", || {
        [job, nohup]
            .iter()
            .all(|p| sandbox_common::ProcStat::read(*p).is_none_or(|s| s.is_zombie()))
    })
    .await;
    let obs = sb.run("echo $MARK $(pwd)").await;
    assert!(content(&obs).ends_with("kept /"), "{obs}");
}

#[tokio::test]
async fn kill_all_kills_the_agents_processes_and_says_how_many() {
    let sb = Sandbox::start().await;
    let job = background_pid(&sb, "sleep 300 & echo $!").await;
    let (status, body) = sb.post_json("/processes/kill_all", &json!({})).await;
    assert_eq!((status, &body), (200, &json!({"killed": 1})));
    eventually("the job to be gone", || {
        sandbox_common::ProcStat::read(job).is_none_or(|s| s.is_zombie())
    })
    .await;
    assert_eq!(exit_code(&sb.run("true").await), 0);
}

#[tokio::test]
async fn held_and_partial_connections_neither_pile_up_nor_lock_the_agent_out() {
    let sb = Sandbox::with_args(&[
        "--header-timeout",
        "2",
        "--max-connections",
        "64",
        "--max-unauthenticated-connections",
        "16",
    ])
    .await;
    let fds = || {
        std::fs::read_dir(format!("/proc/{}/fd", sb.pid()))
            .unwrap()
            .count()
    };
    let before = fds();
    let addr: std::net::SocketAddr = sb.url.trim_start_matches("http://").parse().unwrap();
    // Two hundred connections: half send half a request and wait, half say nothing.
    let mut held = testkit::hold_connections(
        addr,
        200,
        b"POST /execute_action HTTP/1.1\r\nhost: x\r\ncontent-length: 10",
    );
    // The agent is served all the same, and sandboxd holds no more than its cap.
    let started = Instant::now();
    assert_eq!(content(&sb.run("echo served").await), "served");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let open = fds();
    assert!(
        open <= before + 64 + 4,
        "{open} descriptors, {before} before"
    );
    // The first ones, accepted at once, are closed at the head deadline (or evicted sooner).
    for stream in held.iter_mut().take(10) {
        testkit::assert_closed(stream, Duration::from_secs(10));
    }
}

#[tokio::test]
async fn an_output_flood_keeps_the_spool_within_its_budget_and_says_what_was_not_kept() {
    let sb = Sandbox::with_args(&["--output-budget", "1000000"]).await;
    let full_path = |obs: &serde_json::Value| {
        std::path::PathBuf::from(obs["extras"]["full_output_path"].as_str().unwrap())
    };
    let first = sb.run("yes 0123456789 | head -c 600000").await;
    assert_eq!(exit_code(&first), 0, "{first}");
    let second = sb.run("yes 0123456789 | head -c 600000").await;
    assert_eq!(exit_code(&second), 0, "{second}");
    // The older file made room for the newer, and says so.
    let old = std::fs::read_to_string(full_path(&first)).unwrap();
    assert!(
        old.contains("was removed to keep the output files within their budget"),
        "{old}"
    );
    // (The unterminated last line gets its newline.)
    assert_eq!(
        std::fs::metadata(full_path(&second)).unwrap().len(),
        600_001
    );
    // A flood larger than the whole budget: the file stops, and the observation says so.
    let flood = sb.run("yes 0123456789 | head -c 3000000").await;
    assert_eq!(exit_code(&flood), 0, "{flood}");
    let suffix = meta(&flood, "suffix").as_str().unwrap();
    assert!(
        suffix.contains("The full output file keeps only part of this command's output"),
        "{suffix}"
    );
    let kept = std::fs::read_to_string(full_path(&flood)).unwrap();
    assert!(
        kept.ends_with("[sandboxd: output beyond this point was not kept: the output files' budget of 1000000 bytes (--output-budget) is full, and only running commands' files are left in it]\n"),
        "{}",
        &kept[kept.len().saturating_sub(300)..]
    );
    let total: u64 = std::fs::read_dir(full_path(&flood).parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(
        total <= 1_000_000 + 4096,
        "the output files take {total} bytes"
    );
    assert_eq!(content(&sb.run("echo still here").await), "still here");
}

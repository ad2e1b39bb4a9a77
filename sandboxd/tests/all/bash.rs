//! `run` semantics of the persistent bash session (docs/protocol.md §4).

use serde_json::json;

use crate::common::*;

const TIMEOUT_HELP: &str = "You may wait longer to see additional output by sending empty command '', send other commands to interact with the current process, send keys (\"C-c\", \"C-z\", \"C-d\") to interrupt/kill the previous command before sending your new command, or use the timeout parameter in execute_bash for future commands.";
const CONTINUE: &str = "[Below is the output of the previous command.]\n";

#[tokio::test]
async fn state_persists_between_commands() {
    let sb = Sandbox::start().await;
    assert_eq!(exit_code(&sb.run("mkdir -p sub && cd sub").await), 0);
    let obs = sb.run("pwd").await;
    assert_eq!(content(&obs), format!("{}/sub", sb.ws_str()));
    assert_eq!(
        meta(&obs, "working_dir"),
        &json!(format!("{}/sub", sb.ws_str()))
    );
    sb.run("export GREETING=hello; greet() { echo \"$GREETING $1\"; }")
        .await;
    assert_eq!(content(&sb.run("greet world").await), "hello world");
    let obs = sb.run("false").await;
    assert_eq!(exit_code(&obs), 1);
    assert_eq!(obs["success"], json!(false));
    assert_eq!(
        obs["message"],
        json!("Command `false` executed with exit code 1.")
    );
    let obs = sb.run("nonexistent_command").await;
    assert_eq!(exit_code(&obs), 127);
    assert_eq!(
        content(&obs),
        "bash: nonexistent_command: command not found"
    );
}

#[tokio::test]
async fn metadata_names_user_host_and_python_of_a_venv() {
    let sb = Sandbox::start().await;
    let obs = sb.run("true").await;
    let user = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap();
    assert_eq!(meta(&obs, "username"), &json!(user.name));
    let host = nix::unistd::gethostname().unwrap().into_string().unwrap();
    assert_eq!(
        meta(&obs, "hostname"),
        &json!(host.split('.').next().unwrap())
    );
    assert_eq!(meta(&obs, "pid"), &json!(-1));
    assert_eq!(
        meta(&obs, "suffix"),
        &json!("\n[The command completed with exit code 0.]")
    );
    let venv = sb.ws.join("venv");
    let obs = sb
        .run(&format!(
            "python3 -m venv --without-pip {} && source {}/bin/activate",
            venv.display(),
            venv.display()
        ))
        .await;
    assert_eq!(exit_code(&obs), 0, "{obs}");
    let obs = sb.run("true").await;
    assert_eq!(
        meta(&obs, "py_interpreter_path"),
        &json!(format!("{}/bin/python", venv.display()))
    );
}

#[tokio::test]
async fn background_jobs_report_their_pid_and_keep_it() {
    let sb = Sandbox::start().await;
    let obs = sb.run("sleep 300 &").await;
    let pid = meta(&obs, "pid").as_i64().unwrap();
    assert!(pid > 0);
    assert_eq!(content(&obs), format!("[1] {pid}"));
    let obs = sb.run("echo $!").await;
    assert_eq!(content(&obs), pid.to_string());
    assert_eq!(meta(&obs, "pid"), &json!(pid));
    assert_eq!(content(&sb.run("jobs | wc -l").await), "1");
}

#[tokio::test]
async fn hard_timeout_leaves_the_command_running_and_continuations_follow_it() {
    let sb = Sandbox::start().await;
    let obs = sb
        .run_hard("for i in 1 2 3; do echo $i; sleep 1; done; echo end", 1.5)
        .await;
    assert_eq!(exit_code(&obs), -1);
    assert_eq!(meta(&obs, "prefix"), &json!(""));
    assert_eq!(
        meta(&obs, "suffix"),
        &json!(format!(
            "\n[The command timed out after 1.5 seconds. {TIMEOUT_HELP}]"
        ))
    );
    assert!(content(&obs).starts_with('1'), "{obs}");
    assert_eq!(meta(&obs, "username"), &json!(null));

    let refused = sb.run("ls").await;
    assert_eq!(exit_code(&refused), -1);
    assert_eq!(meta(&refused, "prefix"), &json!(CONTINUE));
    assert_eq!(
        meta(&refused, "suffix"),
        &json!(format!(
            "\n[Your command \"ls\" is NOT executed. The previous command is still running - You CANNOT send new commands until the previous command is completed. By setting `is_input` to `true`, you can interact with the current process: {TIMEOUT_HELP}]"
        ))
    );

    // Fetch the rest: the empty command waits for completion.
    let obs = sb.run("").await;
    assert_eq!(exit_code(&obs), 0, "{obs}");
    assert!(content(&obs).ends_with("3\nend"), "{obs}");
    assert_eq!(meta(&obs, "prefix"), &json!(""));
    assert_eq!(
        meta(&obs, "suffix"),
        &json!("\n[The command completed with exit code 0.]")
    );
    // Output seen once is not shown again.
    assert!(!content(&obs).contains('1'), "{obs}");
}

#[tokio::test]
async fn no_change_timeout_then_input() {
    let sb = Sandbox::with_no_change_timeout(1).await;
    let obs = sb
        .run("read -p \"Enter name: \" name && echo \"Hello $name\"")
        .await;
    assert_eq!(content(&obs), "Enter name:");
    assert_eq!(exit_code(&obs), -1);
    assert_eq!(
        meta(&obs, "suffix"),
        &json!(format!(
            "\n[The command has no new output after 1 seconds. {TIMEOUT_HELP}]"
        ))
    );
    let obs = sb.input("John").await;
    assert_output(&obs, "Hello John");
    assert_eq!(obs["extras"]["command"], json!("John"));
}

#[tokio::test]
async fn python_interactive_input() {
    let sb = Sandbox::with_no_change_timeout(1).await;
    let obs = sb
        .run("python3 -c \"name = input('Enter your name: '); age = input('Enter your age: '); print(f'Hello {name}, you are {age} years old')\"")
        .await;
    assert_eq!(content(&obs), "Enter your name:");
    let obs = sb.input("Alice").await;
    assert_eq!(content(&obs), "Enter your age:");
    assert_eq!(meta(&obs, "prefix"), &json!(CONTINUE));
    let obs = sb.input("25").await;
    assert_output(&obs, "Hello Alice, you are 25 years old");
}

#[tokio::test]
async fn idle_session_errors() {
    let sb = Sandbox::start().await;
    let obs = sb.run("").await;
    assert_eq!(
        content(&obs),
        "ERROR: No previous running command to retrieve logs from."
    );
    assert_eq!(obs["extras"]["command"], json!(""));
    assert_eq!(obs["success"], json!(false));
    let obs = sb.input("x").await;
    assert_eq!(
        content(&obs),
        "ERROR: No previous running command to interact with."
    );
    assert_eq!(
        obs["message"],
        json!("Command `` executed with exit code -1.")
    );
}

#[tokio::test]
async fn control_keys() {
    let sb = Sandbox::start().await;
    sb.run_hard("sleep 30", 0.5).await;
    let obs = sb.input("C-c").await;
    assert_eq!(content(&obs), "^C");
    assert_eq!(exit_code(&obs), 130);
    assert_eq!(
        meta(&obs, "suffix"),
        &json!("\n[The command completed with exit code 130. CTRL+C was sent.]")
    );
    // C-d ends input of a reading program.
    sb.run_hard("cat > got.txt", 0.5).await;
    sb.input("some text").await;
    let obs = sb.input("C-d").await;
    assert_eq!(exit_code(&obs), 0, "{obs}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("got.txt")).unwrap(),
        "some text\n"
    );
    // C-z stops the job; the shell is back.
    sb.run_hard("sleep 30", 0.5).await;
    let obs = sb.input("C-z").await;
    assert_eq!(exit_code(&obs), 148, "{obs}");
    assert!(content(&obs).contains("Stopped"), "{obs}");
    assert!(content(&sb.run("kill -9 %1 && echo killed").await).starts_with("killed"));
    // C-c with nothing running still gets a prompt back.
    let obs = sb.run("C-c").await;
    assert_eq!(exit_code(&obs), 130);
}

#[tokio::test]
async fn multiple_commands_are_refused() {
    let sb = Sandbox::start().await;
    let obs = sb.run("ls\necho hi").await;
    assert_eq!(obs["observation"], json!("error"));
    let text = "ERROR: Cannot execute multiple commands at once.\nPlease run each command separately OR chain them into a single command via && or ;\nProvided commands:\n(1) ls\n(2) echo hi";
    assert_eq!(content(&obs), text);
    assert_eq!(obs["extras"], json!({"error_id": ""}));
    // A hidden command always gets a `run` observation (the client would crash otherwise).
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "ls\necho hi", "hidden": true}, "timeout": 120}))
        .await;
    assert_eq!(obs["observation"], json!("run"));
    assert_eq!(obs["extras"]["hidden"], json!(true));
    // One statement over several lines runs, and no continuation prompt shows.
    let obs = sb.run("for i in 1 2; do\n  echo \"line $i\"\ndone").await;
    assert_eq!(content(&obs), "line 1\nline 2");
    let obs = sb.run("cat <<'EOF'\nfirst\n\nsecond\nEOF").await;
    assert_eq!(content(&obs), "first\n\nsecond");
    let obs = sb.run("echo 'a\nb'").await;
    assert_eq!(content(&obs), "a\nb");
}

#[tokio::test]
async fn output_is_what_a_terminal_shows() {
    let sb = Sandbox::start().await;
    let obs = sb
        .run("printf 'progress 10%%\\rprogress 100%%\\n\\033[31mred\\033[0m  \\n'")
        .await;
    assert_eq!(content(&obs), "progress 100%\nred");
    let obs = sb.run("printf 'bad \\377\\376 bytes\\n'").await;
    assert_eq!(content(&obs), "bad \u{fffd}\u{fffd} bytes");
    let obs = sb.run("echo -n no-newline").await;
    assert_eq!(content(&obs), "no-newline");
    // A command line far longer than the terminal's 4095-byte line limit arrives intact.
    let long = "x".repeat(20_000);
    let obs = sb.run(&format!("echo {long} | wc -c")).await;
    assert_eq!(content(&obs), "20001");
    // History expansion is off: `!` is literal.
    assert_eq!(
        content(&sb.run("echo 'hi!' \"there!\"").await),
        "hi! there!"
    );
}

#[tokio::test]
async fn long_output_is_truncated_but_kept_in_full() {
    let sb = Sandbox::start().await;
    let obs = sb.run("python3 -c \"print('x'*40000)\"").await;
    let text = content(&obs);
    assert_eq!(text.chars().count(), 30_047);
    assert!(text.contains("\n[... Observation truncated due to length ...]\n"));
    let path = obs["extras"]["full_output_path"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        format!("{}\n", "x".repeat(40_000))
    );

    let obs = sb.run("seq -f 'Line %.0f' 1 50000").await;
    assert_eq!(
        meta(&obs, "prefix"),
        &json!(
            "[Previous command outputs are truncated. Showing the last 10013 lines of the output below.]\n"
        )
    );
    let text = content(&obs);
    assert!(text.contains("Line 40000") && text.ends_with("Line 50000"));
    assert!(!text.contains("Line 39000\n"));
    let path = obs["extras"]["full_output_path"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(path).unwrap().lines().count(),
        50_000
    );

    // Hidden commands are not cut.
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "python3 -c \"print('y'*40000)\"", "hidden": true}, "timeout": 120}))
        .await;
    assert_eq!(content(&obs).len(), 40_000);
    assert_eq!(obs["extras"]["hidden"], json!(true));
}

#[tokio::test]
async fn static_commands_use_a_fresh_shell_that_is_reaped() {
    let sb = Sandbox::start().await;
    sb.run("cd /tmp && export MAIN_ONLY=1").await;
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "echo $$ $MAIN_ONLY; pwd", "is_static": true}, "timeout": 120}))
        .await;
    let text = content(&obs).to_owned();
    let mut lines = text.lines();
    let pid = lines.next().unwrap().trim().to_owned();
    assert_eq!(lines.next(), Some(sb.ws_str().as_str()), "{obs}");
    assert_eq!(meta(&obs, "working_dir"), &json!(sb.ws_str()));
    eventually("the static shell to be reaped", || {
        !exists(format!("/proc/{pid}"))
    })
    .await;
    // The main session is untouched, and a static command runs while it is busy.
    assert_eq!(content(&sb.run("pwd").await), "/tmp");
    sb.run_hard("sleep 5", 0.3).await;
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "pwd", "is_static": true, "cwd": "/"}, "timeout": 120}))
        .await;
    assert_eq!(content(&obs), "/");
}

#[tokio::test]
async fn a_shell_that_exits_is_replaced() {
    let sb = Sandbox::start().await;
    let obs = sb.run("exit 3").await;
    assert_eq!(obs["observation"], json!("run"));
    assert_eq!(exit_code(&obs), 3, "{obs}");
    let obs = sb.run("echo back").await;
    assert_output(&obs, "back");
}

#[tokio::test]
async fn observations_carry_cause_and_tool_call_metadata() {
    let sb = Sandbox::start().await;
    let tcm = json!({"function_name": "execute_bash", "tool_call_id": "call_1", "model_response": {"id": "r"}, "total_calls_in_response": 1});
    let obs = sb
        .act(json!({"id": 41, "action": "run", "args": {"command": "echo hi"}, "timeout": 120, "tool_call_metadata": tcm}))
        .await;
    assert_eq!(obs["cause"], json!(41));
    assert_eq!(obs["tool_call_metadata"], tcm);
    let obs = sb.run("echo hi").await;
    assert!(obs.get("cause").is_none());
}

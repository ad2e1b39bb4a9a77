use super::*;

fn args(action: &Action) -> &BrowseInteractiveArgs {
    match &action.kind {
        ActionKind::BrowseInteractive(args) => args,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_fenced_block_is_the_action_and_the_text_before_it_the_thought() {
    let action = parse("I need to click on the button with bid 12\n```click(\"12\")```\nmore text");
    let a = args(&action);
    assert_eq!(a.browser_actions, "click(\"12\")");
    assert_eq!(a.thought, "I need to click on the button with bid 12");
    assert_eq!(a.browsergym_send_msg_to_user, "");
    // Cut where the stop sequence would have stopped it, then closed again.
    assert_eq!(
        args(&parse("Go.\n```goto('http://x')\n```")).browser_actions,
        "goto('http://x')"
    );
    assert_eq!(args(&parse("```click('3'")).browser_actions, "click('3')");
}

#[test]
fn messages_to_the_user_are_kept() {
    let a = parse("The price is known.\n```send_msg_to_user(\"$279.49\")```");
    assert_eq!(args(&a).browsergym_send_msg_to_user, "$279.49");
    let plain = parse("It costs $5");
    let a = args(&plain);
    assert_eq!(
        a.browser_actions,
        "send_msg_to_user(\"\"\"It costs $5\"\"\")"
    );
    assert_eq!(a.browsergym_send_msg_to_user, "It costs $5");
    assert_eq!(a.thought, "It costs $5");
}

#[test]
fn the_tree_comes_from_the_observation_text() {
    let content = "[Current URL: x]\n============== BEGIN accessibility tree ==============\nRootWebArea 'a'\n\t[1] link 'b'\n============== END accessibility tree ==============\n";
    assert_eq!(tree_of(content), "RootWebArea 'a'\n\t[1] link 'b'");
    assert_eq!(tree_of("nothing"), "");
    assert!(system_message("find it").contains("## Goal:\nfind it\n\n# Action Space\n16 different types of actions are available.\n\nsend_msg_to_user(text: str)"));
}

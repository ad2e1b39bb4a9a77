use super::*;

fn s(v: &str) -> Arg {
    Arg::Str(v.to_owned())
}

#[test]
fn finds_calls_in_any_text() {
    let calls = parse(
        "Let me fill it.\nfill('12', \"it's \\\"here\\\"\")\nclick(\"13\", button='right')\n# done\nnoop(wait_ms=500) scroll(0, -200.5)\ngo_back()",
    );
    let sources: Vec<String> = calls.iter().map(Call::source).collect();
    assert_eq!(
        sources,
        [
            "fill('12', 'it\\'s \"here\"')",
            "click('13', button='right')",
            "noop(wait_ms=500)",
            "scroll(0, -200.5)",
            "go_back()",
        ]
    );
    assert_eq!(calls[0].args, [s("12"), s("it's \"here\"")]);
}

#[test]
fn lists_triple_quotes_and_garbage() {
    let calls =
        parse("select_option('5', ['a', \"b\",])\nsend_msg_to_user(\"\"\"two\nlines\"\"\")");
    assert_eq!(calls[0].args[1], Arg::List(vec![s("a"), s("b")]));
    assert_eq!(calls[1].args, [s("two\nlines")]);
    assert!(parse("hello world").is_empty());
    assert!(parse("click(12 13)").is_empty());
    assert!(parse("click('unterminated)").is_empty());
    assert_eq!(parse("send_msg_to_user('x = click(1)')").len(), 1);
}

#[test]
fn binds_as_python_does() {
    let click = [("bid", None), ("button", Some(s("left")))];
    let call = |text: &str| parse(text).remove(0);
    assert_eq!(call("click('1')").bind(&click), Ok(vec![s("1"), s("left")]));
    let cases = [
        (
            "click()",
            "TypeError: click() missing 1 required positional argument: 'bid'",
        ),
        (
            "click('1', 'left', 3)",
            "TypeError: click() takes from 1 to 2 positional arguments but 3 were given",
        ),
        (
            "click('1', x=2)",
            "TypeError: click() got an unexpected keyword argument 'x'",
        ),
        (
            "click('1', bid='2')",
            "TypeError: click() got multiple values for argument 'bid'",
        ),
    ];
    for (text, error) in cases {
        assert_eq!(call(text).bind(&click), Err(error.to_owned()), "{text}");
    }
    let fill = [("bid", None), ("value", None)];
    assert_eq!(
        call("fill()").bind(&fill),
        Err("TypeError: fill() missing 2 required positional arguments: 'bid' and 'value'".into())
    );
    assert_eq!(
        call("go_back(1)").bind(&[]),
        Err("TypeError: go_back() takes 0 positional arguments but 1 was given".into())
    );
}

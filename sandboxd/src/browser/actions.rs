//! Runs BrowserGym's functions (the `chat`, `bid`, `nav` and `tab` sets, as the reference's
//! action space) in the active tab, one call after the other; the first failure ends the step
//! with BrowserGym's `TYPE: message`.

use serde_json::{Value, json};
use tokio::time::Instant;

use super::lang::{self, Arg, Call};
use super::session::Session;

/// How a step's actions went.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Why the step failed (`ValueError: ...`), or empty.
    pub(crate) error: String,
    /// What `send_msg_to_user` said, in order.
    pub(crate) messages: Vec<String>,
}

/// Runs every call found in `text`.
pub(crate) async fn run(session: &mut Session, text: &str, deadline: Instant) -> Outcome {
    let mut outcome = Outcome::default();
    for call in lang::parse(text) {
        if let Err(error) = one(session, &call, deadline, &mut outcome).await {
            outcome.error = error;
            break;
        }
    }
    outcome
}

fn s(v: &str) -> Option<Arg> {
    Some(Arg::Str(v.to_owned()))
}

async fn one(
    session: &mut Session,
    call: &Call,
    deadline: Instant,
    outcome: &mut Outcome,
) -> Result<(), String> {
    let name = call.name.as_str();
    let params: &[(&str, Option<Arg>)] = match name {
        "goto" => &[("url", None)],
        "go_back" | "go_forward" | "new_tab" | "tab_close" => &[],
        "noop" => &[("wait_ms", Some(Arg::Num(1000.0)))],
        "scroll" => &[("delta_x", None), ("delta_y", None)],
        "fill" => &[("bid", None), ("value", None)],
        "select_option" => &[("bid", None), ("options", None)],
        "click" | "dblclick" => &[
            ("bid", None),
            ("button", s("left")),
            ("modifiers", Some(Arg::List(Vec::new()))),
        ],
        "hover" | "focus" | "clear" => &[("bid", None)],
        "press" => &[("bid", None), ("key_comb", None)],
        "drag_and_drop" => &[("from_bid", None), ("to_bid", None)],
        "upload_file" => &[("bid", None), ("file", None)],
        "send_msg_to_user" => &[("text", None)],
        "report_infeasible" => &[("reason", None)],
        "tab_focus" => &[("index", None)],
        _ => return Err(format!("NameError: name '{name}' is not defined")),
    };
    let args = call.bind(params)?;
    let mut events = session.subscribe();
    match (name, args.as_slice()) {
        ("goto", [url]) => {
            let url = text(url)?;
            let nav = deadline.min(Instant::now() + super::NAVIGATION_TIMEOUT);
            return session.goto(&url, nav).await;
        }
        ("go_back", []) => return session.history(-1, deadline).await,
        ("go_forward", []) => return session.history(1, deadline).await,
        ("noop", [ms]) => {
            let ms = number(ms)?.max(0.0);
            let until = Instant::now() + std::time::Duration::from_secs_f64(ms.min(3.6e6) / 1000.0);
            tokio::time::sleep_until(until.min(deadline)).await;
        }
        ("scroll", [dx, dy]) => {
            let v = session.viewport();
            let center = (f64::from(v.width) / 2.0, f64::from(v.height) / 2.0);
            session
                .mouse(
                    "mouseWheel",
                    center,
                    json!({"deltaX": number(dx)?, "deltaY": number(dy)?}),
                )
                .await?;
        }
        ("fill" | "clear", [bid, rest @ ..]) => {
            let value = match rest {
                [v] => text(v)?,
                _ => String::new(),
            };
            let el = element(session, bid).await?;
            let prepared = session
                .call_on(
                    &el,
                    super::scripts::PREPARE_FILL,
                    &[Value::from(value.as_str())],
                )
                .await?;
            match prepared {
                Value::String(e) if !e.is_empty() => return Err(e),
                Value::Null => session.insert_text(&value).await?,
                _ => {}
            }
        }
        ("select_option", [bid, options]) => {
            let options = texts(options)?;
            let el = element(session, bid).await?;
            let answer = session
                .call_on(&el, super::scripts::SELECT_OPTION, &[json!(options)])
                .await?;
            if let Some(e) = answer.as_str().filter(|e| !e.is_empty()) {
                return Err(e.to_owned());
            }
        }
        ("click" | "dblclick", [bid, button, modifiers]) => {
            let button = text(button)?;
            if !matches!(button.as_str(), "left" | "middle" | "right") {
                return Err(format!(
                    "Error: mouse.click: Unknown button: {}",
                    sandbox_common::py_repr_str(&button)
                ));
            }
            let modifiers = modifier_bits(modifiers)?;
            let el = element(session, bid).await?;
            let at = session.center(&el).await?;
            let clicks = if name == "dblclick" { 2 } else { 1 };
            click(session, at, &button, modifiers, clicks).await?;
        }
        ("hover", [bid]) => {
            let el = element(session, bid).await?;
            let at = session.center(&el).await?;
            session.mouse("mouseMoved", at, json!({})).await?;
        }
        ("focus", [bid]) => {
            let el = element(session, bid).await?;
            session.call_on(&el, super::scripts::FOCUS, &[]).await?;
        }
        ("press", [bid, keys]) => {
            let el = element(session, bid).await?;
            session.call_on(&el, super::scripts::FOCUS, &[]).await?;
            press(session, &text(keys)?).await?;
        }
        ("drag_and_drop", [from, to]) => {
            let from = element(session, from).await?;
            let start = session.center(&from).await?;
            session.mouse("mouseMoved", start, json!({})).await?;
            session
                .mouse(
                    "mousePressed",
                    start,
                    json!({"button": "left", "buttons": 1, "clickCount": 1}),
                )
                .await?;
            let to = element(session, to).await?;
            let end = session.center(&to).await?;
            session
                .mouse("mouseMoved", end, json!({"button": "left", "buttons": 1}))
                .await?;
            session
                .mouse(
                    "mouseReleased",
                    end,
                    json!({"button": "left", "buttons": 0, "clickCount": 1}),
                )
                .await?;
        }
        ("upload_file", [bid, files]) => {
            let files = texts(files)?;
            let el = element(session, bid).await?;
            if session
                .call_on(&el, super::scripts::IS_FILE_INPUT, &[])
                .await?
                != Value::Bool(true)
            {
                return Err("Error: Element is not an <input type=\"file\"> element".to_owned());
            }
            session.set_files(&el, &files).await?;
        }
        ("send_msg_to_user", [msg]) => outcome.messages.push(text(msg)?),
        ("report_infeasible", [reason]) => outcome.messages.push(text(reason)?),
        ("new_tab", []) => session.new_tab().await.map_err(|e| e.to_string())?,
        ("tab_close", []) => session.close_tab().await?,
        ("tab_focus", [index]) => {
            let index = number(index)?;
            if index.fract() != 0.0 {
                return Err(
                    "TypeError: list indices must be integers or slices, not float".to_owned(),
                );
            }
            session.focus_tab(index as i64).await?;
        }
        _ => return Err(format!("NameError: name '{name}' is not defined")),
    }
    session.settle(&mut events, deadline).await;
    Ok(())
}

/// A string argument; BrowserGym's check for bids and Python's for the rest.
fn text(arg: &Arg) -> Result<String, String> {
    match arg {
        Arg::Str(s) => Ok(s.clone()),
        other => Err(format!(
            "ValueError: expected a string, got {}",
            other.repr()
        )),
    }
}

/// A string or a list of strings (`str | list[str]`).
fn texts(arg: &Arg) -> Result<Vec<String>, String> {
    match arg {
        Arg::List(items) => items.iter().map(text).collect(),
        other => Ok(vec![text(other)?]),
    }
}

fn number(arg: &Arg) -> Result<f64, String> {
    match arg {
        Arg::Num(n) => Ok(*n),
        Arg::Bool(b) => Ok(f64::from(u8::from(*b))),
        other => Err(format!(
            "TypeError: expected a number, got {}",
            other.repr()
        )),
    }
}

async fn element(session: &Session, bid: &Arg) -> Result<String, String> {
    session.element(&text(bid)?).await
}

fn modifier_bits(modifiers: &Arg) -> Result<i64, String> {
    let Arg::List(items) = modifiers else {
        return Err(format!(
            "TypeError: expected a list, got {}",
            modifiers.repr()
        ));
    };
    let mut bits = 0;
    for item in items {
        bits |= match text(item)?.as_str() {
            "Alt" => 1,
            "Control" | "ControlOrMeta" => 2,
            "Meta" => 4,
            "Shift" => 8,
            other => return Err(format!("Error: Unknown modifier: {other}")),
        };
    }
    Ok(bits)
}

async fn click(
    session: &Session,
    at: (f64, f64),
    button: &str,
    modifiers: i64,
    clicks: u32,
) -> Result<(), String> {
    let buttons = match button {
        "left" => 1,
        "right" => 2,
        _ => 4,
    };
    session
        .mouse("mouseMoved", at, json!({"modifiers": modifiers}))
        .await?;
    for count in 1..=clicks {
        let params = json!({"button": button, "buttons": buttons, "clickCount": count, "modifiers": modifiers});
        session.mouse("mousePressed", at, params).await?;
        let params =
            json!({"button": button, "buttons": 0, "clickCount": count, "modifiers": modifiers});
        session.mouse("mouseReleased", at, params).await?;
    }
    Ok(())
}

/// A key's DevTools description: `key`, `code`, key code, and the text it types.
fn key_def(key: &str) -> Option<(String, String, i64, String)> {
    let named = |code: &str, vk: i64, text: &str| {
        Some((key.to_owned(), code.to_owned(), vk, text.to_owned()))
    };
    match key {
        "Enter" => named("Enter", 13, "\r"),
        "Tab" => named("Tab", 9, ""),
        "Backspace" => named("Backspace", 8, ""),
        "Delete" => named("Delete", 46, ""),
        "Escape" => named("Escape", 27, ""),
        "ArrowLeft" => named("ArrowLeft", 37, ""),
        "ArrowUp" => named("ArrowUp", 38, ""),
        "ArrowRight" => named("ArrowRight", 39, ""),
        "ArrowDown" => named("ArrowDown", 40, ""),
        "Home" => named("Home", 36, ""),
        "End" => named("End", 35, ""),
        "PageUp" => named("PageUp", 33, ""),
        "PageDown" => named("PageDown", 34, ""),
        "Insert" => named("Insert", 45, ""),
        "Space" | " " => Some((" ".into(), "Space".into(), 32, " ".into())),
        "Shift" | "ShiftLeft" => Some(("Shift".into(), "ShiftLeft".into(), 16, String::new())),
        "Control" | "ControlLeft" => {
            Some(("Control".into(), "ControlLeft".into(), 17, String::new()))
        }
        "Alt" | "AltLeft" => Some(("Alt".into(), "AltLeft".into(), 18, String::new())),
        "Meta" | "MetaLeft" => Some(("Meta".into(), "MetaLeft".into(), 91, String::new())),
        "Backquote" => key_def("`"),
        "Minus" => key_def("-"),
        "Equal" => key_def("="),
        "Backslash" => key_def("\\"),
        _ if key.len() == 4 && key.starts_with("Key") => key_def(&key[3..].to_ascii_lowercase()),
        _ if key.len() == 6 && key.starts_with("Digit") => key_def(&key[5..]),
        _ if key.len() > 1 && key.starts_with('F') => {
            let n: i64 = key[1..].parse().ok().filter(|n| (1..=24).contains(n))?;
            named(key, 111 + n, "")
        }
        _ => {
            let mut chars = key.chars();
            let c = chars.next()?;
            if chars.next().is_some() {
                return None;
            }
            let upper = c.to_ascii_uppercase();
            let (code, vk) = if c.is_ascii_alphabetic() {
                (format!("Key{upper}"), i64::from(upper as u8))
            } else if c.is_ascii_digit() {
                (format!("Digit{c}"), i64::from(c as u8))
            } else {
                (String::new(), 0)
            };
            Some((key.to_owned(), code, vk, key.to_owned()))
        }
    }
}

/// Presses a Playwright key combination (`Enter`, `Control+a`, `Shift+Tab`).
async fn press(session: &Session, combination: &str) -> Result<(), String> {
    let parts: Vec<&str> = if combination == "+" {
        vec!["+"]
    } else {
        combination.split('+').collect()
    };
    let Some((key, held)) = parts.split_last() else {
        return Err(format!("Error: Unknown key: \"{combination}\""));
    };
    let unknown = |k: &str| format!("Error: Unknown key: \"{k}\"");
    let mut modifiers = 0;
    let mut downs = Vec::new();
    for m in held {
        let m = if *m == "ControlOrMeta" { "Control" } else { m };
        let bit = match m {
            "Alt" | "AltLeft" => 1,
            "Control" | "ControlLeft" => 2,
            "Meta" | "MetaLeft" => 4,
            "Shift" | "ShiftLeft" => 8,
            other => return Err(unknown(other)),
        };
        let def = key_def(m).ok_or_else(|| unknown(m))?;
        modifiers |= bit;
        session
            .key(json!({"type": "rawKeyDown", "key": def.0, "code": def.1,
                        "windowsVirtualKeyCode": def.2, "modifiers": modifiers}))
            .await?;
        downs.push((def, bit));
    }
    let (key, code, vk, mut typed) = key_def(key).ok_or_else(|| unknown(key))?;
    if modifiers & !8 != 0 {
        typed.clear();
    } else if modifiers & 8 != 0 && typed.chars().count() == 1 && typed != "\r" {
        typed = typed.to_uppercase();
    }
    let kind = if typed.is_empty() {
        "rawKeyDown"
    } else {
        "keyDown"
    };
    session
        .key(
            json!({"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk,
                    "text": typed, "unmodifiedText": typed, "modifiers": modifiers}),
        )
        .await?;
    session
        .key(
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk,
                    "modifiers": modifiers}),
        )
        .await?;
    for ((key, code, vk, _), bit) in downs.into_iter().rev() {
        modifiers &= !bit;
        session
            .key(
                json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk,
                        "modifiers": modifiers}),
            )
            .await?;
    }
    Ok(())
}

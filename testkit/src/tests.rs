//! Unit tests of `lib.rs`.

use super::*;

async fn post(fake: &FakeLlm, path: &str, body: Value) -> (u16, HeaderMap, Value) {
    let url = format!("http://{}{path}", fake.addr());
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth("k")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    (status, headers, serde_json::from_str(&text).unwrap())
}

#[tokio::test]
async fn serves_the_script_in_order_and_records_requests() {
    let fake = FakeLlm::start([
        Reply::error(429, "slow down").retry_after("2"),
        Reply::tool_calls([("execute_bash", serde_json::json!({"command": "ls"}))]),
        Reply::text("hi").with_usage(10, 2).with_cached_tokens(4),
    ])
    .await;
    let request = serde_json::json!({"model": "m", "messages": []});

    let (status, headers, body) = post(&fake, "/v1/chat/completions", request.clone()).await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "2");
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let (status, _, body) = post(&fake, "/chat/completions", request.clone()).await;
    assert_eq!(status, 200);
    let response: ChatResponse = serde_json::from_value(body).unwrap();
    assert_eq!(response.model, "m");
    let call = &response.choices[0].message.tool_calls.as_ref().unwrap()[0];
    assert_eq!(call.id, "call_1_0");
    assert_eq!(call.function.arguments, r#"{"command":"ls"}"#);
    assert!(response.usage.unwrap().prompt_tokens > 0);

    let (_, _, body) = post(&fake, "/v1/chat/completions", request.clone()).await;
    let response: ChatResponse = serde_json::from_value(body).unwrap();
    let usage = response.usage.unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (10, 2));
    assert_eq!(usage.prompt_tokens_details.unwrap().cached_tokens, 4);

    let (status, _, body) = post(&fake, "/v1/chat/completions", request.clone()).await;
    assert_eq!(status, 500);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exhausted")
    );

    assert_eq!(fake.requests(), vec![request; 4]);
    let recorded = fake.recorded();
    assert_eq!(recorded[1].path, "/chat/completions");
    assert_eq!(recorded[0].authorization.as_deref(), Some("Bearer k"));
}

#[tokio::test]
async fn a_responder_sees_each_request_after_pushed_replies() {
    let fake = FakeLlm::with_fn(|body, n| {
        Reply::text(format!(
            "{n}: {}",
            body["messages"].as_array().map_or(0, Vec::len)
        ))
    })
    .await;
    fake.push(Reply::text("pushed"));
    let request = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
    let texts: Vec<Value> = [
        post(&fake, "/v1/chat/completions", request.clone()).await.2,
        post(&fake, "/v1/chat/completions", request).await.2,
    ]
    .into_iter()
    .map(|b| b["choices"][0]["message"]["content"].clone())
    .collect();
    assert_eq!(texts, ["pushed", "1: 1"]);
    assert_eq!(fake.remaining(), 0);
}

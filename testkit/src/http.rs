//! A test's HTTP request sent and its answer read, in one call: the test fails (with the
//! reason) when the server cannot be reached or the answer cannot be read.

use reqwest::RequestBuilder;
use serde_json::Value;

/// Sends `request`; the answer's body as JSON (the test fails when it is not JSON).
pub async fn json_answer(request: RequestBuilder) -> Value {
    send(request)
        .await
        .json()
        .await
        .unwrap_or_else(|e| panic!("the answer is not JSON: {e}"))
}

/// Sends `request`; the answer's body as text.
pub async fn text_answer(request: RequestBuilder) -> String {
    read_text(send(request).await).await
}

/// Sends `request`; the answer's status and its body as JSON, or as a JSON string holding the
/// text when it is not JSON (an error page, an empty body).
pub async fn status_and_json(request: RequestBuilder) -> (u16, Value) {
    let (status, text) = status_and_text(request).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Sends `request`; the answer's status and its body as text.
pub async fn status_and_text(request: RequestBuilder) -> (u16, String) {
    let response = send(request).await;
    (response.status().as_u16(), read_text(response).await)
}

async fn send(request: RequestBuilder) -> reqwest::Response {
    request
        .send()
        .await
        .unwrap_or_else(|e| panic!("the request was not answered: {e}"))
}

async fn read_text(response: reqwest::Response) -> String {
    response
        .text()
        .await
        .unwrap_or_else(|e| panic!("the answer could not be read: {e}"))
}

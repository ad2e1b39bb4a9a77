//! The LLM registry and the router: two fake models, the main one and a vision model; a
//! request that carries an image goes to the vision model, and each service's metrics, kept in
//! the state, sum to the conversation's.

use serde_json::json;
use testkit::{FakeLlm, Reply};

use super::{dir_with_workspace, run, state, succeeded};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_an_image_goes_to_the_vision_model_and_the_services_sum_to_the_total() {
    let (dir, workspace) = dir_with_workspace();
    let code = format!(
        "import base64\nfrom IPython.display import Image, display\ndisplay(Image(data=base64.b64decode('{PNG}')))"
    );
    let main =
        FakeLlm::start([
            Reply::tool_calls([("execute_ipython_cell", json!({"code": code}))])
                .with_usage(100, 10),
        ])
        .await;
    let vision = FakeLlm::start([Reply::finish("a dot").with_usage(200, 20)]).await;
    let config = format!(
        "[llm.prices.\"fake-model\"]\ninput_cost_per_token = 0.001\noutput_cost_per_token = 0.002\n\
         [llm.router.vision]\nmodel = \"fake-vision\"\nbase_url = \"{}\"\napi_key = \"k\"\n\
         tool_calling = \"native\"\nvision = true\n\
         [llm.router.vision.prices.\"fake-vision\"]\ninput_cost_per_token = 0.01\noutput_cost_per_token = 0.02\n",
        vision.base_url()
    );
    succeeded(
        run(
            dir.path(),
            &workspace,
            &main,
            "Show a picture.",
            &config,
            &[],
        )
        .await,
    );

    assert_eq!(main.requests().len(), 1, "the request without an image");
    let routed = vision.requests();
    assert_eq!(routed.len(), 1, "the request with the cell's image");
    assert_eq!(routed[0]["model"], "fake-vision");
    let image_parts = routed[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|p| p["type"] == "image_url")
        .count();
    assert!(image_parts >= 1, "{}", routed[0]);

    let state = state(dir.path());
    assert_eq!(state["agent_state"], "finished");
    let stats = &state["stats"];
    let services = stats["services"].as_object().unwrap();
    let agent = &services["agent"];
    let routed = &services["llm_for_routing.vision"];
    assert_eq!(agent["model"], "fake-model");
    assert_eq!(routed["model"], "fake-vision");
    assert_eq!(agent["calls"], 1);
    assert_eq!(routed["calls"], 1);
    assert_eq!(agent["prompt_tokens"], 100);
    assert_eq!(routed["prompt_tokens"], 200);
    let cost = |v: &serde_json::Value| v["accumulated_cost"].as_f64().unwrap();
    assert!((cost(agent) - 0.12).abs() < 1e-9, "{agent}");
    assert!((cost(routed) - 2.4).abs() < 1e-9, "{routed}");
    let total = &stats["total"];
    assert!(
        (cost(total) - (cost(agent) + cost(routed))).abs() < 1e-9,
        "{stats}"
    );
    assert_eq!(total["prompt_tokens"], 300);
    assert_eq!(total["completion_tokens"], 30);
    assert_eq!(total["calls"], 2);
    // The budget counted both.
    assert!(
        (state["budget"]["spent"].as_f64().unwrap() - 2.52).abs() < 1e-9,
        "{state}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_context_window_goes_to_the_fallback_model_and_later_ones_too() {
    let (dir, workspace) = dir_with_workspace();
    // 413: the prompt is over the main model's window (not retried).
    let main = FakeLlm::start([Reply::error(413, "prompt too long")]).await;
    let fallback = FakeLlm::start([
        Reply::tool_calls([("execute_bash", json!({"command": "echo hi"}))]),
        Reply::finish("done"),
    ])
    .await;
    let config = format!(
        "[llm.router.fallback]\nmodel = \"fake-large\"\nbase_url = \"{}\"\napi_key = \"k\"\n\
         tool_calling = \"native\"\n",
        fallback.base_url()
    );
    succeeded(run(dir.path(), &workspace, &main, "Go.", &config, &[]).await);
    assert_eq!(main.requests().len(), 1, "asked once, then never again");
    let routed = fallback.requests();
    assert_eq!(routed.len(), 2);
    assert!(routed.iter().all(|r| r["model"] == "fake-large"));
    let state = state(dir.path());
    assert_eq!(state["agent_state"], "finished");
    assert_eq!(
        state["stats"]["services"]["llm_for_routing.fallback"]["calls"],
        2
    );
    assert_eq!(state["stats"]["services"]["agent"]["calls"], 0);
}

/// The LLM summarising condenser gets its model from the registry as the `condenser` service:
/// a client with metrics of its own (the same model), which the state's stats show next to the
/// agent's, summing to the total, and which the budget counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_condenser_has_a_service_of_its_own_whose_metrics_sum_with_the_agents_and_count_in_the_budget()
 {
    let (dir, workspace) = dir_with_workspace();
    // A request without tools is the condenser's: 1,000 + 100 tokens. The agent's: 100 + 10.
    let fake = FakeLlm::with_fn(|request, _| {
        let messages = request["messages"].as_array().unwrap();
        if request.get("tools").is_none() {
            return Reply::text("SUMMARY: the agent echoed numbers.").with_usage(1000, 100);
        }
        let steps = messages.iter().filter(|m| m["role"] == "tool").count();
        let summarized = messages
            .iter()
            .any(|m| super::text(m).contains("SUMMARY: the agent echoed"));
        let reply = if summarized && steps >= 2 {
            Reply::finish("ok")
        } else {
            Reply::tool_calls([("execute_bash", json!({"command": format!("echo {steps}")}))])
        };
        reply.with_usage(100, 10)
    })
    .await;
    let config = "[llm.prices.\"fake-model\"]\ninput_cost_per_token = 0.001\noutput_cost_per_token = 0.002\n\
                  [condenser]\ntype = \"llm\"\nkeep_first = 2\nmax_size = 10\n";
    succeeded(run(dir.path(), &workspace, &fake, "count", config, &[]).await);

    let requests = fake.requests();
    let summaries = requests.iter().filter(|r| r.get("tools").is_none()).count();
    assert!(summaries >= 1, "the condenser never called the model");
    let state = state(dir.path());
    assert_eq!(state["agent_state"], "finished");
    let stats = &state["stats"];
    let services = stats["services"].as_object().unwrap();
    assert_eq!(
        services.keys().collect::<Vec<_>>(),
        ["agent", "condenser"],
        "{stats}"
    );
    let (agent, condenser) = (&services["agent"], &services["condenser"]);
    assert_eq!(agent["model"], "fake-model");
    assert_eq!(condenser["model"], "fake-model");
    assert_eq!(condenser["calls"], summaries);
    assert_eq!(agent["calls"], requests.len() - summaries);
    assert_eq!(condenser["prompt_tokens"], 1000 * summaries);
    let cost = |v: &serde_json::Value| v["accumulated_cost"].as_f64().unwrap();
    // $1.20 a summary, $0.12 an agent call.
    assert!(
        (cost(condenser) - 1.2 * summaries as f64).abs() < 1e-9,
        "{condenser}"
    );
    assert!(
        (cost(agent) - 0.12 * (requests.len() - summaries) as f64).abs() < 1e-9,
        "{agent}"
    );
    let total = &stats["total"];
    assert!(
        (cost(total) - (cost(agent) + cost(condenser))).abs() < 1e-9,
        "{stats}"
    );
    assert_eq!(total["calls"], requests.len());
    assert!(
        (state["budget"]["spent"].as_f64().unwrap() - cost(total)).abs() < 1e-9,
        "{state}"
    );
}

"""Drive `agentd serve` with OpenHands' own RemoteRuntime (openhands-ai 0.62.0).

Reads SANDBOX_REMOTE_RUNTIME_API_URL, SANDBOX_API_KEY and SANDBOX_RUNTIME_CONTAINER_IMAGE, as
OpenHands does. Connects (start by session id, wait for pod_status ready, /alive, initial
environment), runs a bash command that reads an environment variable sent in /start, creates,
edits and views a file with the oh_aci editor, closes (POST /stop) and checks the session is
gone. Exit status 0 when every check passed, 1 otherwise.
"""

import asyncio
import os
import sys
import time
import uuid

import httpx
from openhands.core.config import OpenHandsConfig
from openhands.events.action import CmdRunAction, FileEditAction
from openhands.events.action.files import FileEditSource
from openhands.events.observation import CmdOutputObservation, ErrorObservation
from openhands.llm.llm_registry import LLMRegistry
from openhands.runtime.impl.remote.remote_runtime import RemoteRuntime

MARKER = 'hello-from-openhands'


def check(what: str, ok: bool, detail: object = '') -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        print(f'     {detail!r}', flush=True)
        raise SystemExit(1)


def main() -> None:
    api_url = os.environ['SANDBOX_REMOTE_RUNTIME_API_URL']
    api_key = os.environ['SANDBOX_API_KEY']
    config = OpenHandsConfig()
    config.runtime = 'remote'
    config.enable_browser = False
    config.sandbox.remote_runtime_api_url = api_url
    config.sandbox.api_key = api_key
    config.sandbox.runtime_container_image = os.environ['SANDBOX_RUNTIME_CONTAINER_IMAGE']
    config.sandbox.runtime_startup_env_vars = {
        'NO_CHANGE_TIMEOUT_SECONDS': '5',
        'COMPAT_MARKER': MARKER,
    }
    sid = f'compat-{uuid.uuid4().hex[:12]}'
    runtime = RemoteRuntime(
        config,
        event_stream=None,  # type: ignore[arg-type]
        llm_registry=LLMRegistry(config),
        sid=sid,
        plugins=[],
        headless_mode=True,
    )
    t0 = time.monotonic()
    asyncio.run(runtime.connect())
    check(f'connect (start + ready + initial env) in {time.monotonic() - t0:.2f}s', True)
    try:
        obs = runtime.run_action(CmdRunAction(command='echo $COMPAT_MARKER; whoami; pwd'))
        check('bash command runs', isinstance(obs, CmdOutputObservation), obs)
        check('bash sees the /start environment', MARKER in obs.content, obs.content)
        check('exit code 0', obs.exit_code == 0, obs)

        path = '/workspace/compat.py'
        obs = runtime.run_action(
            FileEditAction(
                path=path,
                command='create',
                file_text='x = 1\nprint(x)\n',
                impl_source=FileEditSource.OH_ACI,
            )
        )
        check('editor create', not isinstance(obs, ErrorObservation), obs)
        obs = runtime.run_action(
            FileEditAction(
                path=path,
                command='str_replace',
                old_str='x = 1',
                new_str='x = 42',
                impl_source=FileEditSource.OH_ACI,
            )
        )
        check('editor str_replace', 'x = 42' in obs.content, obs)
        obs = runtime.run_action(
            FileEditAction(path=path, command='view', impl_source=FileEditSource.OH_ACI)
        )
        check('editor view shows the edit', 'x = 42' in obs.content, obs)
        obs = runtime.run_action(CmdRunAction(command=f'python3 {path}'))
        check('the edited file runs', obs.content.strip().endswith('42'), obs)
    finally:
        runtime.close()
    gone = httpx.get(f'{api_url}/sessions/{sid}', headers={'X-API-Key': api_key})
    check('close stopped the sandbox (session 404)', gone.status_code == 404, gone.text)
    print('all RemoteRuntime checks passed', flush=True)


if __name__ == '__main__':
    try:
        main()
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - report anything as a failed check
        import traceback

        traceback.print_exc()
        print(f'FAIL {e!r}', flush=True)
        sys.exit(1)

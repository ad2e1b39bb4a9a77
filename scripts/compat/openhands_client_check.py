#!/usr/bin/env python3
"""Drive a running sandboxd through OpenHands' own Python client, unchanged.

Uses `openhands.runtime.impl.action_execution.action_execution_client.ActionExecutionClient`
(openhands-ai 0.62.0 .. 1.6.0) with the smallest possible subclass: it only supplies the
server URL, the `X-Session-API-Key` header (exactly as `LocalRuntime` does) and `connect()`.
Every action goes through `Runtime.run_action` -> `ActionExecutionClient.send_action_for_execution`
(the client's own request building, `timeout + 5` s HTTP deadline, hidden handling and
`observation_from_dict` decoding); listings and transfers go through the client's
`list_files`, `copy_to` and `copy_from`. No Docker, no reference server.

Usage:
    openhands_client_check.py --url http://127.0.0.1:PORT [--api-key KEY] [--working-dir DIR]
                              [--no-change-timeout N] [--setup-env] [--require-ipython] [-v]

Exit status: 0 all checks passed, 1 at least one check failed, 2 usage / cannot connect.
Every failure is printed with the raw HTTP exchanges of that check and the client's traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable

# OpenHands logs a lot at import and per request; keep it quiet unless asked.
if '-v' not in sys.argv and '--verbose' not in sys.argv:
    os.environ.setdefault('LOG_LEVEL', 'ERROR')

try:
    import httpx
    from openhands.core.config import OpenHandsConfig
    from openhands.core.exceptions import AgentRuntimeTimeoutError
    from openhands.events.action import (
        AgentThinkAction,
        BrowseInteractiveAction,
        BrowseURLAction,
        CmdRunAction,
        FileEditAction,
        FileReadAction,
        FileWriteAction,
        IPythonRunCellAction,
        MessageAction,
    )
    from openhands.events.action.files import FileEditSource, FileReadSource
    from openhands.events.observation import (
        AgentThinkObservation,
        CmdOutputObservation,
        ErrorObservation,
        FileEditObservation,
        FileReadObservation,
        FileWriteObservation,
        IPythonRunCellObservation,
        NullObservation,
    )
    from openhands.events.serialization import event_from_dict, event_to_dict
    from openhands.llm.llm_registry import LLMRegistry
    from openhands.runtime.impl.action_execution.action_execution_client import (
        ActionExecutionClient,
    )
    from openhands.runtime.utils.request import RequestHTTPError
    from openhands.utils.http_session import HttpSession
except ImportError as e:  # pragma: no cover - environment problem
    print(f'cannot import openhands (pip install openhands-ai==0.62.0): {e}', file=sys.stderr)
    sys.exit(2)

TIMEOUT_T = (
    "You may wait longer to see additional output by sending empty command '', send other "
    'commands to interact with the current process, send keys ("C-c", "C-z", "C-d") to '
    'interrupt/kill the previous command before sending your new command, or use the timeout '
    'parameter in execute_bash for future commands.'
)
BELOW = '[Below is the output of the previous command.]\n'
BROWSER_OFF = 'Browser functionality is not supported or disabled.'


# --------------------------------------------------------------------------------------------
# The client: the real ActionExecutionClient, plus a recording wrapper around its HTTP session.
# --------------------------------------------------------------------------------------------


@dataclass
class RecordingHttpSession(HttpSession):
    """The client's own HttpSession; additionally remembers every exchange for failure reports.

    It forwards the call unchanged (same method, URL, headers, json/files/params, timeout) and
    hands the untouched httpx.Response back to the client code.
    """

    exchanges: list[dict[str, Any]] = field(default_factory=list)

    def request(self, *args, **kwargs):
        rec: dict[str, Any] = {
            'method': args[0] if args else kwargs.get('method'),
            'url': args[1] if len(args) > 1 else kwargs.get('url'),
            'params': kwargs.get('params'),
            'json': kwargs.get('json'),
            'files': list(kwargs['files'].keys()) if kwargs.get('files') else None,
            'timeout': kwargs.get('timeout'),
        }
        t0 = time.monotonic()
        try:
            response = super().request(*args, **kwargs)
        except Exception as e:
            rec['exception'] = repr(e)
            rec['elapsed'] = time.monotonic() - t0
            self.exchanges.append(rec)
            raise
        rec['elapsed'] = time.monotonic() - t0
        rec['status'] = response.status_code
        ctype = response.headers.get('content-type', '')
        rec['content_type'] = ctype
        rec['body'] = response.text if 'zip' not in ctype else f'<{len(response.content)} bytes>'
        self.exchanges.append(rec)
        return response

    def stream(self, *args, **kwargs):
        self.exchanges.append(
            {
                'method': args[0] if args else None,
                'url': args[1] if len(args) > 1 else None,
                'params': kwargs.get('params'),
                'stream': True,
                'timeout': kwargs.get('timeout'),
            }
        )
        return super().stream(*args, **kwargs)


class SandboxdClient(ActionExecutionClient):
    """Minimal ActionExecutionClient subclass: a fixed URL and the session key, nothing else."""

    def __init__(
        self,
        url: str,
        api_key: str | None,
        config: OpenHandsConfig,
        env_vars: dict[str, str] | None = None,
        plugins: list | None = None,
        extra_headers: dict[str, str] | None = None,
    ):
        self._url = url.rstrip('/')
        self._session_api_key = api_key
        super().__init__(
            config,
            event_stream=None,  # type: ignore[arg-type]
            llm_registry=LLMRegistry(config),
            sid='sandboxd-compat',
            plugins=plugins or [],
            env_vars=env_vars,
            headless_mode=True,
        )
        self.session = RecordingHttpSession()
        if api_key:
            # exactly what LocalRuntime.__init__ does with SESSION_API_KEY
            self.session.headers['X-Session-API-Key'] = api_key
        for k, v in (extra_headers or {}).items():
            self.session.headers[k] = v

    @property
    def action_execution_server_url(self) -> str:
        return self._url

    @property
    def session_api_key(self) -> str | None:
        return self._session_api_key

    async def connect(self) -> None:  # the parts of LocalRuntime.connect that talk HTTP
        self.wait_until_alive(30)
        self._runtime_initialized = True

    def wait_until_alive(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.check_if_alive()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


# --------------------------------------------------------------------------------------------
# Tiny check framework
# --------------------------------------------------------------------------------------------


class CheckFailure(AssertionError):
    pass


def expect(cond: bool, msg: str) -> None:
    if not cond:
        raise CheckFailure(msg)


def expect_eq(actual: Any, expected: Any, what: str) -> None:
    if actual != expected:
        raise CheckFailure(f'{what}: expected {expected!r}, got {actual!r}')


def expect_cls(obs: Any, cls: type, what: str = 'observation') -> None:
    if type(obs) is not cls:
        detail = getattr(obs, 'content', obs)
        raise CheckFailure(
            f'{what}: expected {cls.__name__}, got {type(obs).__name__}: {str(detail)[:500]!r}'
        )


@dataclass
class Result:
    name: str
    status: str  # PASS, FAIL, INFO
    detail: str = ''
    seconds: float = 0.0


class Suite:
    def __init__(self, rt: SandboxdClient, verbose: bool):
        self.rt = rt
        self.verbose = verbose
        self.results: list[Result] = []

    def run(self, name: str, fn: Callable[[], str | None], informational: bool = False,
            cleanup: Callable[[], None] | None = None) -> bool:
        start = len(self.rt.session.exchanges)
        t0 = time.monotonic()
        try:
            note = fn() or ''
            self.results.append(Result(name, 'PASS', note, time.monotonic() - t0))
            print(f'PASS  {name}' + (f'  ({note})' if note else ''), flush=True)
            ok = True
        except Exception as e:
            status = 'INFO' if informational else 'FAIL'
            tb = traceback.format_exc()
            ex = self.rt.session.exchanges[start:]
            detail = f'{type(e).__name__}: {e}'
            self.results.append(Result(name, status, detail, time.monotonic() - t0))
            print(f'{status}  {name}: {detail}', flush=True)
            if not informational or self.verbose:
                print(_indent('client traceback:\n' + tb), flush=True)
            print(_indent('HTTP exchanges of this check (last 4):\n' + _fmt_exchanges(ex[-4:])),
                  flush=True)
            ok = False
            if cleanup is not None:
                try:
                    cleanup()
                except Exception as ce:  # noqa: BLE001
                    print(_indent(f'cleanup failed: {ce!r}'), flush=True)
        return ok

    def info(self, name: str, detail: str) -> None:
        self.results.append(Result(name, 'INFO', detail))
        print(f'INFO  {name}: {detail}', flush=True)


def _indent(s: str) -> str:
    return '\n'.join('      ' + line for line in s.rstrip('\n').split('\n'))


def _fmt_exchanges(exchanges: list[dict[str, Any]]) -> str:
    out = []
    for rec in exchanges:
        body = rec.get('body')
        if isinstance(body, str) and len(body) > 3000:
            body = body[:3000] + f'... <{len(body)} chars>'
        req = {k: rec[k] for k in ('params', 'json', 'files', 'timeout') if rec.get(k) is not None}
        out.append(
            f"{rec.get('method')} {rec.get('url')} {json.dumps(req, default=str)}\n"
            f"  -> {rec.get('status', rec.get('exception', 'stream'))} "
            f"({rec.get('elapsed', 0):.3f}s) {body if body is not None else ''}"
        )
    return '\n'.join(out) if out else '(none)'


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------


def run_checks(args: argparse.Namespace) -> int:
    config = OpenHandsConfig()
    # LLM editing is a client-side feature (needs an LLM); everything here uses oh_aci.
    env_vars = {'SANDBOXD_COMPAT_VAR': 'hello compat "quoted"'} if args.setup_env else None
    plugins = []
    if args.jupyter:
        # what CodeActAgent asks for; makes add_env_vars() also run an IPython cell
        from openhands.runtime.plugins import AgentSkillsRequirement, JupyterRequirement

        plugins = [AgentSkillsRequirement(), JupyterRequirement()]
    rt = SandboxdClient(args.url, args.api_key, config, env_vars=env_vars, plugins=plugins)
    suite = Suite(rt, args.verbose)
    N = args.no_change_timeout

    def act(action: Any) -> Any:
        # the agent controller's entry point: Runtime.run_action
        obs = rt.run_action(action)
        # what EventStream.add_event does next: serialise (to JSON) and, on replay, decode again
        d = event_to_dict(obs)
        json.dumps(d)
        back = event_from_dict(json.loads(json.dumps(d)))
        if type(back) is not type(obs) or getattr(back, 'content', None) != getattr(obs, 'content', None):
            raise CheckFailure(f'event-stream round trip changed {type(obs).__name__}: {d!r}'[:800])
        return obs

    def cmd(command: str, timeout: float | None = None, **kw: Any) -> Any:
        a = CmdRunAction(command=command, **kw)
        if timeout is not None:
            a.set_hard_timeout(timeout)  # blocking=True, as tests and LLM tool timeouts do
        return act(a)

    def reset_shell() -> None:
        """After a failed bash check: interrupt whatever may still run."""
        for _ in range(3):
            obs = cmd('C-c', is_input=True, timeout=5)
            if isinstance(obs, CmdOutputObservation) and 'No previous running command' in obs.content:
                return
            obs = cmd('true', timeout=5)
            if isinstance(obs, CmdOutputObservation) and obs.exit_code == 0:
                return

    # ---------------------------------------------------------------- liveness, server_info, auth
    try:
        rt.wait_until_alive(args.connect_timeout)
    except Exception as e:  # noqa: BLE001
        print(f'sandboxd at {args.url} is not alive: {e!r}', file=sys.stderr)
        return 2

    def check_alive() -> str:
        rt.check_if_alive()  # GET /alive, timeout 5, raise_for_status via send_request
        last = rt.session.exchanges[-1]
        expect_eq(last['status'], 200, '/alive status')
        expect_eq(json.loads(last['body']), {'status': 'ok'}, '/alive body')
        # /alive must not need the key (RemoteRuntime/DockerRuntime poll it before anything else)
        anon = SandboxdClient(args.url, None, config)
        anon.check_if_alive()
        return 'check_if_alive with and without key'

    suite.run('alive: check_if_alive()', check_alive)

    def check_server_info() -> str:
        # Not used by ActionExecutionClient 0.62 (only the app server has its own
        # /server_info); checked against docs/protocol.md §2 with the client's request helper.
        r = rt._send_action_server_request('GET', f'{rt.action_execution_server_url}/server_info', timeout=5)
        d = r.json()
        for k in ('uptime', 'idle_time'):
            expect(isinstance(d.get(k), (int, float)), f'server_info.{k} not a number: {d!r}')
        res = d.get('resources', {})
        expect(isinstance(res.get('cpu_percent'), (int, float)), f'cpu_percent: {res!r}')
        for sect, keys in (('memory', ('rss', 'vms', 'percent')),
                           ('disk', ('total', 'used', 'free', 'percent')),
                           ('io', ('read_bytes', 'write_bytes'))):
            for k in keys:
                expect(isinstance(res.get(sect, {}).get(k), (int, float)), f'{sect}.{k}: {res!r}')
        return 'not used by the client; shape per docs/protocol.md'

    suite.run('server_info: shape (not used by the client)', check_server_info)

    if args.api_key:
        def check_auth() -> str:
            bad = SandboxdClient(args.url, args.api_key + '-wrong', config)
            try:
                bad.run_action(CmdRunAction('echo nope'))
            except RequestHTTPError as e:
                expect_eq(e.response.status_code, 403, 'status with wrong key')
                expect_eq(e.detail, 'Invalid API Key', 'detail with wrong key')
            else:
                raise CheckFailure('wrong key was accepted')
            # RemoteRuntime also sends X-API-Key (meant for the control plane) everywhere
            remote_like = SandboxdClient(args.url, args.api_key, config,
                                         extra_headers={'X-API-Key': 'control-plane-key'})
            obs = remote_like.run_action(CmdRunAction('echo with-x-api-key'))
            expect_cls(obs, CmdOutputObservation)
            expect_eq(obs.content, 'with-x-api-key', 'content with X-API-Key header')
            return 'wrong key -> RequestHTTPError 403 Invalid API Key; X-API-Key ignored'

        suite.run('auth: wrong X-Session-API-Key is refused', check_auth)

    # ------------------------------------------------------------------ initial env (optional)
    if args.setup_env:
        def check_setup_env() -> str:
            # Runtime.setup_initial_env: add_env_vars (export + ~/.bashrc) and git config,
            # exactly what LocalRuntime/DockerRuntime.connect() run on a fresh sandbox.
            rt.setup_initial_env()
            obs = cmd('echo "$SANDBOXD_COMPAT_VAR"')
            expect_cls(obs, CmdOutputObservation)
            expect_eq(obs.content, 'hello compat "quoted"', 'exported variable')
            obs = cmd('git config --global user.name')
            expect_eq(obs.content, 'openhands', 'git user.name')
            return 'add_env_vars + _setup_git_config'

        suite.run('connect: Runtime.setup_initial_env()', check_setup_env, cleanup=reset_shell)

    # --------------------------------------------------------------------------------- bash
    wd_holder: dict[str, str] = {}

    def check_plain() -> str:
        obs = cmd('echo hello')
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.content, 'hello', 'content')
        expect_eq(obs.command, 'echo hello', 'command')
        expect_eq(obs.exit_code, 0, 'exit_code')
        expect_eq(obs.metadata.exit_code, 0, 'metadata.exit_code')
        expect_eq(obs.metadata.prefix, '', 'prefix')
        expect_eq(obs.metadata.suffix, '\n[The command completed with exit code 0.]', 'suffix')
        expect_eq(obs.hidden, False, 'hidden')
        expect(obs.success, 'success property')
        expect(isinstance(obs.metadata.pid, int), 'pid is int')
        expect(isinstance(obs.metadata.working_dir, str) and obs.metadata.working_dir.startswith('/'),
               f'working_dir {obs.metadata.working_dir!r}')
        expect(obs.metadata.username, 'username set')
        expect(obs.metadata.hostname, 'hostname set')
        expect(obs.metadata.py_interpreter_path is not None, 'py_interpreter_path set')
        expect_eq(obs.message, 'Command `echo hello` executed with exit code 0.', 'message')
        wd_holder['wd'] = args.working_dir or obs.metadata.working_dir
        if args.working_dir:
            expect_eq(obs.metadata.working_dir, args.working_dir, 'working_dir')
        return f'cwd={obs.metadata.working_dir} user={obs.metadata.username}'

    suite.run('run: plain echo', check_plain, cleanup=reset_shell)
    wd = wd_holder.get('wd') or args.working_dir or '/workspace'

    def check_exit_codes() -> None:
        obs = cmd('nonexistent_command_sandboxd_compat')
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.exit_code, 127, 'exit code')
        expect('command not found' in obs.content, f'content {obs.content!r}')
        obs = cmd('false')
        expect_eq(obs.exit_code, 1, 'exit code of false')
        expect(not obs.success, 'success false')
        obs = cmd('echo a && echo b; echo c | tr c C')
        expect_eq(obs.content, 'a\nb\nC', 'chained commands')
        obs = cmd("echo 'multi\nline' > /dev/null && echo ok")
        expect_eq(obs.content, 'ok', 'newline inside quotes is one statement')

    suite.run('run: exit codes, chaining', check_exit_codes, cleanup=reset_shell)

    def check_cwd() -> None:
        obs = cmd('mkdir -p compat_sub && cd compat_sub')
        expect_eq(obs.exit_code, 0, 'cd exit')
        expect_eq(obs.metadata.working_dir, f'{wd}/compat_sub', 'working_dir after cd')
        obs = cmd('pwd')
        expect_eq(obs.content, f'{wd}/compat_sub', 'pwd persists')
        obs = cmd('cd ..')
        expect_eq(obs.metadata.working_dir, wd, 'working_dir after cd ..')

    suite.run('run: cwd persists between actions', check_cwd, cleanup=reset_shell)

    def check_idle_errors() -> None:
        obs = cmd('')
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.content, 'ERROR: No previous running command to retrieve logs from.', 'content')
        expect_eq(obs.exit_code, -1, 'exit_code')
        obs = cmd('x', is_input=True)
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.content, 'ERROR: No previous running command to interact with.', 'content')
        expect_eq(obs.command, '', 'command')

    suite.run("run: '' and is_input while idle", check_idle_errors, cleanup=reset_shell)

    def check_multi() -> None:
        obs = cmd('echo one\necho two')
        expect_cls(obs, ErrorObservation)
        expect_eq(
            obs.content,
            'ERROR: Cannot execute multiple commands at once.\n'
            'Please run each command separately OR chain them into a single command via && or ;\n'
            'Provided commands:\n(1) echo one\n(2) echo two',
            'content',
        )
        expect_eq(obs.error_id, '', 'error_id')

    suite.run('run: multiple commands -> ErrorObservation', check_multi, cleanup=reset_shell)

    def check_hard_timeout() -> None:
        loop = 'for i in 1 2 3 4 5; do echo tick$i; sleep 1; done'
        obs = cmd(loop, timeout=2.5)
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.exit_code, -1, 'exit_code on hard timeout')
        expect_eq(obs.metadata.prefix, '', 'prefix of first observation')
        expect_eq(obs.metadata.suffix, f'\n[The command timed out after 2.5 seconds. {TIMEOUT_T}]', 'suffix')
        expect(obs.content.startswith('tick1'), f'content {obs.content!r}')
        expect('tick5' not in obs.content, f'content {obs.content!r}')
        # a new command while it runs is refused, not executed
        obs = cmd('echo must-not-run')
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.exit_code, -1, 'exit_code of refused command')
        expect_eq(obs.metadata.prefix, BELOW, 'prefix of refused command')
        expect_eq(
            obs.metadata.suffix,
            '\n[Your command "echo must-not-run" is NOT executed. The previous command is still '
            'running - You CANNOT send new commands until the previous command is completed. '
            f'By setting `is_input` to `true`, you can interact with the current process: {TIMEOUT_T}]',
            'suffix of refused command',
        )
        expect('must-not-run' not in obs.content, 'refused command output')
        # continuation with '' until it completes
        seen = []
        for _ in range(5):
            obs = cmd('', timeout=10)
            expect_cls(obs, CmdOutputObservation)
            seen.append(obs.content)
            if obs.exit_code != -1:
                break
        expect_eq(obs.exit_code, 0, 'exit_code after continuation')
        expect_eq(obs.metadata.prefix, '', 'prefix of the completed continuation')
        expect_eq(obs.metadata.suffix, '\n[The command completed with exit code 0.]', 'suffix')
        expect('tick5' in '\n'.join(seen), f'continuation content {seen!r}')
        expect('tick1' not in '\n'.join(seen), f'old output repeated: {seen!r}')

    suite.run("run: hard timeout, refused command, continuation with ''", check_hard_timeout,
              cleanup=reset_shell)

    def check_continue_timeout_prefix() -> None:
        obs = cmd('echo first; sleep 2; echo second; sleep 2; echo third', timeout=1)
        expect_eq(obs.exit_code, -1, 'exit_code')
        expect_eq(obs.content, 'first', 'first content')
        obs = cmd('', timeout=2)
        expect_eq(obs.exit_code, -1, 'exit_code of continuation')
        expect_eq(obs.metadata.prefix, BELOW, 'prefix of a timed-out continuation')
        expect_eq(obs.metadata.suffix, f'\n[The command timed out after 2.0 seconds. {TIMEOUT_T}]', 'suffix')
        expect_eq(obs.content, 'second', 'continuation content')
        obs = cmd('', timeout=10)
        expect_eq(obs.exit_code, 0, 'exit code at the end')
        expect_eq(obs.content, 'third', 'final content')

    suite.run("run: timed-out continuation gets the 'Below is the output' prefix",
              check_continue_timeout_prefix, cleanup=reset_shell)

    def check_no_change_and_input() -> str:
        # default client path: timeout 120 (sandbox.timeout), blocking False -> no-change timeout
        t0 = time.monotonic()
        obs = cmd('read -p "Enter name: " name && echo "Hello $name"')
        took = time.monotonic() - t0
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.content, 'Enter name:', 'prompt content')
        expect_eq(obs.exit_code, -1, 'exit_code')
        expect_eq(obs.metadata.suffix, f'\n[The command has no new output after {N} seconds. {TIMEOUT_T}]', 'suffix')
        obs = cmd('John', is_input=True)
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.content, 'Hello John', 'content after input')
        expect_eq(obs.exit_code, 0, 'exit_code after input')
        expect_eq(obs.command, 'John', 'command')
        return f'no-change timeout after {took:.1f}s'

    suite.run('run: no-change timeout (default timeout) + is_input', check_no_change_and_input,
              cleanup=reset_shell)

    def check_ctrl_c() -> None:
        obs = cmd('sleep 100', timeout=1)
        expect_eq(obs.exit_code, -1, 'exit_code of timed-out sleep')
        obs = cmd('C-c', is_input=True)
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.exit_code, 130, 'exit_code after C-c')
        expect_eq(obs.metadata.suffix, '\n[The command completed with exit code 130. CTRL+C was sent.]', 'suffix')
        expect_eq(obs.content, '^C', 'content')
        obs = cmd('echo after')
        expect_eq(obs.content, 'after', 'shell usable after C-c')

    suite.run('run: C-c interrupts a running command', check_ctrl_c, cleanup=reset_shell)

    def check_hidden() -> None:
        obs = cmd('echo secret', hidden=True)
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.hidden, True, 'hidden')
        expect_eq(obs.content, 'secret', 'content')
        expect_eq(obs.exit_code, 0, 'exit_code')
        # the client writes extras.hidden=True before decoding: an ErrorObservation reply would
        # raise TypeError inside the client (the reference does that for multi-commands)
        obs = cmd('echo one\necho two', hidden=True)
        expect_cls(obs, CmdOutputObservation, 'hidden multi-command')
        expect_eq(obs.hidden, True, 'hidden')
        expect('Cannot execute multiple commands' in obs.content, f'content {obs.content!r}')

    suite.run('run: hidden=True (incl. hidden error case)', check_hidden, cleanup=reset_shell)

    def check_static() -> None:
        obs = cmd('pwd', is_static=True, cwd='/tmp')
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.content, '/tmp', 'content')
        expect_eq(obs.exit_code, 0, 'exit_code')
        expect_eq(obs.metadata.working_dir, '/tmp', 'working_dir')
        obs = cmd('cd / && export STATIC_ONLY=1', is_static=True)
        expect_eq(obs.exit_code, 0, 'exit code')
        obs = cmd('pwd; echo "[$STATIC_ONLY]"')
        expect_eq(obs.content, f'{wd}\n[]', 'main session unaffected by is_static')
        # while the main shell is busy (the git-status poll case)
        obs = cmd('sleep 30', timeout=1)
        expect_eq(obs.exit_code, -1, 'busy main shell')
        obs = cmd('echo static-while-busy', is_static=True, hidden=True)
        expect_cls(obs, CmdOutputObservation)
        expect_eq(obs.content, 'static-while-busy', 'is_static while busy')
        obs = cmd('C-c', is_input=True)
        expect_eq(obs.exit_code, 130, 'C-c')

    suite.run('run: is_static=True (fresh shell, cwd, while busy)', check_static, cleanup=reset_shell)

    def check_background() -> None:
        obs = cmd('sleep 300 &')
        expect_cls(obs, CmdOutputObservation)
        m = re.fullmatch(r'\[1\] (\d+)', obs.content)
        expect(m is not None, f'content {obs.content!r}')
        expect_eq(obs.metadata.pid, int(m.group(1)), 'pid')
        obs = cmd('echo $!')
        expect_eq(obs.content, m.group(1), '$!')
        expect_eq(obs.metadata.pid, int(m.group(1)), 'pid stays')
        obs = cmd('kill %1; wait %1 2>/dev/null; true')
        expect_eq(obs.exit_code, 0, 'kill background job')

    suite.run('run: background job pid', check_background, cleanup=reset_shell)

    def check_long_output() -> str:
        obs = cmd("head -c 40000 /dev/zero | tr '\\0' x; echo")
        expect_cls(obs, CmdOutputObservation)
        expect_eq(len(obs.content), 30047, 'truncated length')
        expect('\n[... Observation truncated due to length ...]\n' in obs.content, 'truncation marker')
        obs = cmd('seq 1 20000 | tail -n 1')
        expect_eq(obs.content, '20000', 'content')
        return 'middle cut at 30000 chars'

    suite.run('run: long output truncation', check_long_output, cleanup=reset_shell)

    def check_unicode_and_long_line() -> str:
        obs = cmd("echo 'héllo wörld ✓ 日本'")
        expect_eq(obs.content, 'héllo wörld ✓ 日本', 'non-ASCII output')
        # the 30 000 cap counts code points (the client re-applies it and must not cut again)
        obs = cmd("printf '✓%.0s' $(seq 1 40000); echo")
        expect_eq(len(obs.content), 30047, 'truncated length of multi-byte output (code points)')
        expect(obs.content.startswith('✓' * 15000 + '\n[... Observation'), 'head of the cut')
        # command lines longer than a tty line (4095 bytes)
        long_arg = 'y' * 10000
        obs = cmd(f'echo {long_arg} | wc -c')
        expect_eq(obs.content, '10001', '10 kB command line')
        return 'code-point truncation, 10 kB command'

    suite.run('run: non-ASCII output, long command line', check_unicode_and_long_line, cleanup=reset_shell)

    def check_git_changes() -> str:
        # Runtime.get_git_changes -> GitHandler: is_static+hidden runs, then (script missing)
        # FileWriteAction of git_changes.py into `mktemp -d` and a retry - the app's poll path.
        repo = f'{wd}/compat_repo'
        obs = cmd(f'mkdir -p {repo} && cd {repo} && git init -q && git config user.email a@b && '
                  f'git config user.name a && echo a > tracked.txt && git add . && '
                  f'git commit -qm init && echo b >> tracked.txt && echo new > untracked.txt && cd {wd}')
        expect_eq(obs.exit_code, 0, f'repo setup: {obs.content!r}')
        changes = rt.get_git_changes(repo)
        expect(isinstance(changes, list), f'get_git_changes returned {changes!r}')
        paths = sorted(c.get('path') for c in changes)
        expect('tracked.txt' in ' '.join(paths) and 'untracked.txt' in ' '.join(paths), f'changes {changes!r}')
        return f'{len(changes)} changes'

    suite.run('client: Runtime.get_git_changes() (is_static+hidden+write)', check_git_changes,
              cleanup=reset_shell)

    # -------------------------------------------------------------------------------- files
    fdir = f'{wd}/compat_files'
    fpath = f'{fdir}/a.txt'

    def check_write_read() -> None:
        obs = act(FileWriteAction(path=fpath, content='line1\nline2\nline3'))
        expect_cls(obs, FileWriteObservation)
        expect_eq(obs.path, fpath, 'path')
        expect_eq(obs.content, '', 'content')
        obs = act(FileReadAction(path=fpath))
        expect_cls(obs, FileReadObservation)
        expect_eq(obs.content, 'line1\nline2\nline3\n', 'content (write adds a final newline)')
        expect_eq(obs.path, fpath, 'path')
        expect_eq(obs.impl_source, FileReadSource.DEFAULT, 'impl_source')
        obs = act(FileReadAction(path=fpath, start=1, end=2))
        expect_eq(obs.content, 'line2\n', 'start/end selection')
        # relative paths resolve against the bash cwd
        obs = act(FileWriteAction(path='compat_rel.txt', content='rel'))
        expect_cls(obs, FileWriteObservation)
        expect_eq(obs.path, f'{wd}/compat_rel.txt', 'relative write path')
        obs = act(FileReadAction(path='compat_rel.txt'))
        expect_eq(obs.content, 'rel\n', 'relative read')

    suite.run('write/read: default impl', check_write_read)

    def check_read_errors() -> None:
        obs = act(FileReadAction(path=f'{wd}/compat_missing.txt'))
        expect_cls(obs, ErrorObservation)
        expect_eq(obs.content, f'File not found: {wd}/compat_missing.txt. Your current working directory is {wd}.', 'content')
        obs = act(FileReadAction(path=fdir))
        expect_cls(obs, ErrorObservation)
        expect_eq(obs.content, f'Path is a directory: {fdir}. You can only read files', 'content')

    suite.run('read: missing file / directory -> ErrorObservation', check_read_errors)

    def check_read_aci() -> None:
        obs = act(FileReadAction(path=fpath, impl_source=FileReadSource.OH_ACI, view_range=[2, 3]))
        expect_cls(obs, FileReadObservation)
        expect_eq(obs.impl_source, FileReadSource.OH_ACI, 'impl_source')
        expect_eq(obs.content, f"Here's the result of running `cat -n` on {fpath}:\n     2\tline2\n     3\tline3\n", 'content')
        obs = act(FileReadAction(path=fpath, impl_source=FileReadSource.OH_ACI))
        expect_eq(obs.content, f"Here's the result of running `cat -n` on {fpath}:\n"
                  '     1\tline1\n     2\tline2\n     3\tline3\n     4\t\n', 'content')
        obs = act(FileReadAction(path=fpath, impl_source=FileReadSource.OH_ACI, view_range=[1, 9]))
        expect(obs.content.startswith("NOTE: We only show up to 3 since there're only 3 lines in this file.\n"),
               f'content {obs.content!r}')
        obs = act(FileReadAction(path=fdir, impl_source=FileReadSource.OH_ACI))
        expect_eq(obs.content, f"Here's the files and directories up to 2 levels deep in {fdir}, "
                  f'excluding hidden items:\n{fdir}/\n{fdir}/a.txt', 'directory view')
        obs = act(FileReadAction(path='compat_rel.txt', impl_source=FileReadSource.OH_ACI))
        expect_cls(obs, FileReadObservation)
        expect(obs.content.startswith('ERROR:\nInvalid `path` parameter: compat_rel.txt. The path should be an absolute path'),
               f'content {obs.content!r}')

    suite.run('read: impl_source oh_aci (view_range, dir, relative)', check_read_aci)

    epath = f'{wd}/compat_e.txt'

    def edit(**kw: Any) -> Any:
        return act(FileEditAction(path=kw.pop('path', epath), impl_source=FileEditSource.OH_ACI, **kw))

    def check_edit() -> None:
        obs = edit(command='create', file_text='line one\nline two\nline one')
        expect_cls(obs, FileEditObservation)
        expect_eq(obs.content, f'File created successfully at: {epath}', 'create content')
        expect_eq(obs.path, epath, 'path')
        expect_eq(obs.prev_exist, False, 'prev_exist')
        expect_eq(obs.old_content, None, 'old_content')
        expect_eq(obs.new_content, None, 'new_content')
        expect_eq(obs.impl_source, FileEditSource.OH_ACI, 'impl_source')
        expect_eq(obs.diff, f'--- {epath}\n+++ {epath}\n@@ -1 +1,3 @@\n-\n+line one\n+line two\n+line one', 'diff')
        obs = edit(command='create', file_text='x')
        expect_eq(obs.content, f'ERROR:\nInvalid `path` parameter: {epath}. File already exists at: {epath}. '
                  'Cannot overwrite files using command `create`.', 'create existing')
        obs = edit(command='str_replace', old_str='line one', new_str='L1')
        expect_eq(obs.content, 'ERROR:\nNo replacement was performed. Multiple occurrences of old_str '
                  '`line one` in lines [1, 3]. Please ensure it is unique.', 'non-unique')
        obs = edit(command='str_replace', old_str='line two', new_str='LINE 2')
        expect_cls(obs, FileEditObservation)
        expect_eq(obs.content, f"The file {epath} has been edited. Here's the result of running `cat -n` on "
                  f'a snippet of {epath}:\n     1\tline one\n     2\tLINE 2\n     3\tline one\n'
                  'Review the changes and make sure they are as expected. Edit the file again if necessary.',
                  'str_replace content')
        expect_eq(obs.old_content, 'line two', 'old_content')
        expect_eq(obs.new_content, 'LINE 2', 'new_content')
        expect_eq(obs.diff, f'--- {epath}\n+++ {epath}\n@@ -2 +2 @@\n-line two\n+LINE 2', 'diff')
        obs = edit(command='insert', insert_line=1, new_str='inserted')
        expect_eq(obs.content, f"The file {epath} has been edited. Here's the result of running `cat -n` on "
                  'a snippet of the edited file:\n     1\tline one\n     2\tinserted\n     3\tLINE 2\n'
                  '     4\tline one\nReview the changes and make sure they are as expected (correct '
                  'indentation, no duplicate lines, etc). Edit the file again if necessary.', 'insert content')
        expect_eq(obs.diff, f'--- {epath}\n+++ {epath}\n@@ -1,0 +2 @@\n+inserted', 'insert diff')
        obs = edit(command='undo_edit')
        expect_eq(obs.content, f"Last edit to {epath} undone successfully. Here's the result of running "
                  f'`cat -n` on {epath}:\n     1\tline one\n     2\tLINE 2\n     3\tline one\n', 'undo content')
        obs = edit(command='view')
        expect_cls(obs, FileEditObservation)
        expect_eq(obs.content, f"Here's the result of running `cat -n` on {epath}:\n"
                  '     1\tline one\n     2\tLINE 2\n     3\tline one\n', 'view content')
        expect_eq(obs.diff, '', 'view diff')
        obs = edit(command='view', path='compat_e.txt')
        expect(obs.content.startswith('ERROR:\nInvalid `path` parameter: compat_e.txt. The path should be an absolute path'),
               f'relative path content {obs.content!r}')
        obs = edit(command='frobnicate')
        expect_eq(obs.content, 'ERROR:\nUnrecognized command frobnicate. The allowed commands for the '
                  'oh_editor tool are: view, create, str_replace, insert, undo_edit', 'bad command')
        # str() of the observation (what the agent's LLM sees) must work on our extras
        expect(isinstance(str(obs), str), 'str(observation)')

    suite.run('edit: oh_aci create/str_replace/insert/undo_edit/view', check_edit)

    def check_edit_visualize() -> None:
        # FileEditObservation.__str__ / visualize_diff use old_content/new_content/diff as the
        # agent's memory does; make sure our extras are usable there.
        obs = edit(command='str_replace', old_str='LINE 2', new_str='LINE TWO')
        expect_cls(obs, FileEditObservation)
        text = str(obs)
        expect('LINE TWO' in text, f'str(obs) {text[:300]!r}')

    suite.run('edit: observation renders (str)', check_edit_visualize)

    def check_unicode_files() -> None:
        upath = f'{fdir}/ü.txt'
        obs = act(FileWriteAction(path=upath, content='grüße\n✓ done'))
        expect_cls(obs, FileWriteObservation)
        expect_eq(obs.path, upath, 'non-ASCII path')
        obs = act(FileReadAction(path=upath))
        expect_eq(obs.content, 'grüße\n✓ done\n', 'non-ASCII content')
        obs = edit(path=upath, command='str_replace', old_str='✓', new_str='✗')
        expect_cls(obs, FileEditObservation)
        expect_eq(obs.diff, f'--- {upath}\n+++ {upath}\n@@ -2 +2 @@\n-✓ done\n+✗ done', 'diff')
        obs = act(FileReadAction(path=upath, impl_source=FileReadSource.OH_ACI, view_range=[2, 2]))
        expect_eq(obs.content, f"Here's the result of running `cat -n` on {upath}:\n     2\t✗ done\n", 'view')
        obs = cmd(f'rm {upath}')  # leave compat_files/ with a.txt only, for the listings below
        expect_eq(obs.exit_code, 0, 'rm')

    suite.run('write/read/edit: non-ASCII paths and content', check_unicode_files)

    # ------------------------------------------------------------------------------ browser
    def check_browse() -> None:
        obs = act(BrowseURLAction(url='http://example.com'))
        expect_cls(obs, ErrorObservation)
        expect_eq(obs.content, BROWSER_OFF, 'content')
        obs = act(BrowseInteractiveAction(browser_actions='goto("http://example.com")'))
        expect_cls(obs, ErrorObservation)
        expect_eq(obs.content, BROWSER_OFF, 'content')

    suite.run('browse: BrowseURLAction / BrowseInteractiveAction -> ErrorObservation', check_browse)

    # ------------------------------------------------------------------ client-side actions
    def check_client_side() -> None:
        expect_cls(act(AgentThinkAction(thought='hm')), AgentThinkObservation, 'think')
        expect_cls(act(MessageAction(content='hi')), NullObservation, 'message')

    suite.run('client-side: think/message never reach the server', check_client_side)

    # ------------------------------------------------------------------------------ IPython
    ipy_state: dict[str, Any] = {}

    def check_ipython() -> str:
        try:
            obs = act(IPythonRunCellAction(code='print(6 * 7)'))
        except RequestHTTPError as e:
            ipy_state['unsupported'] = f'HTTP {e.response.status_code} detail={e.detail!r}'
            raise
        expect_cls(obs, IPythonRunCellObservation)
        expect(obs.content.startswith('42\n[Jupyter current working directory: '), f'content {obs.content!r}')
        expect_eq(obs.image_urls, None, 'image_urls')
        obs = act(IPythonRunCellAction(code='x = 1'))
        expect(obs.content.startswith('[Code executed successfully with no output]'), f'content {obs.content!r}')
        obs = act(IPythonRunCellAction(code='x', include_extra=False))
        expect_eq(obs.content, '1', 'include_extra=False')
        a = IPythonRunCellAction(code='import time; time.sleep(5)')
        a.set_hard_timeout(2)
        obs = act(a)
        expect(obs.content.startswith('[Execution timed out (2.0 seconds).]'), f'content {obs.content!r}')
        return 'IPython supported'

    suite.run('ipython: IPythonRunCellAction', check_ipython, informational=not args.require_ipython)

    # ------------------------------------------------------------------------ list / copy
    def check_list_files() -> None:
        names = rt.list_files()
        expect(isinstance(names, list), 'list')
        for n in ('compat_files/', 'compat_sub/', 'compat_e.txt', 'compat_rel.txt'):
            expect(n in names, f'{n!r} not in {names!r}')
        dirs = [n for n in names if n.endswith('/')]
        expect_eq(names[: len(dirs)], dirs, 'directories first')
        expect_eq(rt.list_files(fdir), ['a.txt'], 'list_files(dir)')
        expect_eq(rt.list_files('compat_files'), ['a.txt'], 'list_files(relative)')
        expect_eq(rt.list_files(f'{wd}/compat_does_not_exist'), [], 'missing dir')

    suite.run('list_files: default, path, relative, missing', check_list_files)

    host_tmp = tempfile.mkdtemp(prefix='sandboxd-compat-')

    def check_copy_to_file() -> None:
        src = os.path.join(host_tmp, 'up.txt')
        with open(src, 'w') as f:
            f.write('uploaded\n')
        rt.copy_to(src, f'{wd}/compat_up')
        last = rt.session.exchanges[-1]
        expect_eq(last['status'], 200, 'upload status')
        expect_eq(json.loads(last['body']), {'filename': 'up.txt', 'destination': f'{wd}/compat_up', 'recursive': False},
                  'upload response')
        obs = act(FileReadAction(path=f'{wd}/compat_up/up.txt'))
        expect_cls(obs, FileReadObservation)
        expect_eq(obs.content, 'uploaded\n', 'uploaded content')

    suite.run('copy_to: single file', check_copy_to_file)

    def check_copy_to_dir() -> None:
        src = os.path.join(host_tmp, 'tree')
        os.makedirs(os.path.join(src, 'nested'))
        with open(os.path.join(src, 'top.txt'), 'w') as f:
            f.write('top\n')
        with open(os.path.join(src, 'nested', 'deep.txt'), 'w') as f:
            f.write('deep\n')
        rt.copy_to(src, f'{wd}/compat_up2', recursive=True)
        last = rt.session.exchanges[-1]
        expect_eq(last['status'], 200, 'upload status')
        body = json.loads(last['body'])
        expect_eq(body.get('recursive'), True, 'recursive')
        expect(body.get('filename', '').endswith('.zip'), f'filename {body!r}')
        obs = cmd(f'cd {wd}/compat_up2 && find . -type f | sort && cd {wd}')
        expect_eq(obs.content, './tree/nested/deep.txt\n./tree/top.txt', 'extracted tree')
        obs = cmd(f'ls {wd}/compat_up2/*.zip 2>/dev/null | wc -l')
        expect_eq(obs.content, '0', 'zip removed after extraction')

    suite.run('copy_to: directory (recursive zip)', check_copy_to_dir, cleanup=reset_shell)

    def check_copy_to_binary_and_read() -> None:
        src = os.path.join(host_tmp, 'bin.dat')
        with open(src, 'wb') as f:
            f.write(b'\x89PNG\r\n\x1a\n' + bytes(range(256)) * 8)
        rt.copy_to(src, f'{wd}/compat_up')
        obs = act(FileReadAction(path=f'{wd}/compat_up/bin.dat'))
        expect_cls(obs, ErrorObservation)
        expect_eq(obs.content, 'ERROR_BINARY_FILE', 'binary read')

    suite.run('copy_to + read of a binary file -> ERROR_BINARY_FILE', check_copy_to_binary_and_read)

    def check_copy_from() -> None:
        zpath = rt.copy_from(f'{wd}/compat_up2')
        try:
            with zipfile.ZipFile(zpath) as z:
                names = sorted(z.namelist())
                expect_eq(names, ['tree/nested/deep.txt', 'tree/top.txt'], 'zip entries')
                expect_eq(z.read('tree/top.txt'), b'top\n', 'zip content')
        except zipfile.BadZipFile:
            with open(zpath, 'rb') as f:
                raise CheckFailure(f'copy_from did not return a zip: {f.read(300)!r}')
        finally:
            os.unlink(zpath)
        # the client does not check the status of /download_files: an error yields a
        # "zip" with the JSON error inside. Make sure errors are at least not 2xx.
        r = rt.session.request('GET', f'{rt.action_execution_server_url}/download_files',
                               params={'path': f'{wd}/compat_nope'}, timeout=30)
        expect(r.status_code >= 400, f'missing path gave {r.status_code}')

    suite.run('copy_from: directory zip', check_copy_from)

    def check_vscode_mcp() -> None:
        # get_vscode_token() returns '' without the VSCode plugin; the endpoint itself:
        r = rt._send_action_server_request('GET', f'{rt.action_execution_server_url}/vscode/connection_token', timeout=10)
        expect_eq(r.json(), {'token': None}, 'vscode token')
        r = rt._send_action_server_request('POST', f'{rt.action_execution_server_url}/update_mcp_server',
                                           json=[], timeout=60)
        expect_eq(r.status_code, 200, 'update_mcp_server status')
        expect('router_error_log' in r.json(), f'update_mcp_server body {r.text!r}')

    suite.run('vscode token / update_mcp_server endpoints', check_vscode_mcp)

    def check_microagents() -> str:
        # Runtime._load_microagents_from_directory: list_files + copy_from + unzip + parse,
        # what the app does for a repository's .openhands/microagents.
        from pathlib import Path

        mdir = f'{wd}/compat_ma/.openhands/microagents'
        obs = act(FileWriteAction(path=f'{mdir}/compat.md', content=(
            '---\nname: compat\ntype: knowledge\nversion: 1.0.0\nagent: CodeActAgent\n'
            'triggers:\n- compatcheck\n---\nSay hello to the compat check.')))
        expect_cls(obs, FileWriteObservation)
        agents = rt._load_microagents_from_directory(Path(mdir), 'compat')
        names = sorted(a.name for a in agents)
        expect_eq(names, ['compat'], 'loaded microagents')
        return 'list_files + copy_from + parse'

    suite.run('client: Runtime._load_microagents_from_directory()', check_microagents, cleanup=reset_shell)

    def check_git_hooks() -> str:
        # Runtime.maybe_setup_git_hooks: relative read/write/run in the bash cwd
        obs = cmd(f'mkdir -p {wd}/compat_hooks/.openhands && cd {wd}/compat_hooks')
        expect_eq(obs.exit_code, 0, 'cd')
        obs = act(FileWriteAction(path='.openhands/pre-commit.sh', content='#!/bin/bash\nexit 0'))
        expect_cls(obs, FileWriteObservation)
        rt.maybe_setup_git_hooks()
        obs = act(FileReadAction(path='.git/hooks/pre-commit'))
        expect_cls(obs, FileReadObservation)
        expect('This hook was installed by OpenHands' in obs.content, f'hook {obs.content[:200]!r}')
        obs = cmd(f'test -x .git/hooks/pre-commit && cd {wd}')
        expect_eq(obs.exit_code, 0, 'hook is executable')
        return 'hook installed'

    suite.run('client: Runtime.maybe_setup_git_hooks()', check_git_hooks, cleanup=reset_shell)

    def check_mcp() -> str:
        # Optional feature (docs/protocol.md §2): with stdio MCP servers the client posts them to
        # /update_mcp_server and then talks MCP over SSE at /mcp/sse.
        from openhands.core.config.mcp_config import MCPStdioServerConfig

        cfg = rt.get_mcp_config([MCPStdioServerConfig(name='compat', command='true')])
        last = [e for e in rt.session.exchanges if str(e.get('url', '')).endswith('/update_mcp_server')][-1]
        urls = [s.url for s in cfg.sse_servers]
        r = rt.session.request('GET', f'{rt.action_execution_server_url}/mcp/sse', timeout=5)
        expect(r.status_code == 200, f'/update_mcp_server -> {last.get("status")} {last.get("body")}; '
               f'client then uses {urls}; GET /mcp/sse -> {r.status_code} (MCP tools unusable)')
        return 'MCP proxy present'

    suite.run('mcp: stdio servers via /update_mcp_server + /mcp/sse', check_mcp, informational=True)

    shutil.rmtree(host_tmp, ignore_errors=True)

    # ------------------------------------------------------------------------------ timing
    def check_client_timeout() -> str:
        # The client's own deadline: timeout + 5 s. A hard timeout answered in time is fine.
        t0 = time.monotonic()
        try:
            obs = cmd('sleep 3', timeout=1)
        except AgentRuntimeTimeoutError as e:
            raise CheckFailure(f'client deadline hit: {e}')
        took = time.monotonic() - t0
        expect_eq(obs.exit_code, -1, 'exit_code')
        expect(took < 3, f'hard timeout answered after {took:.2f}s')
        obs = cmd('C-c', is_input=True)
        expect_eq(obs.exit_code, 130, 'C-c')
        return f'hard timeout 1.0 s answered in {took:.2f}s'

    suite.run('timeouts: hard timeout answered before the client deadline', check_client_timeout,
              cleanup=reset_shell)

    # cleanup the sandbox working dir of what we created (best effort)
    try:
        cmd(f'cd {wd} && rm -rf compat_sub compat_files compat_rel.txt compat_e.txt compat_up '
            'compat_up2 compat_repo compat_ma compat_hooks', timeout=30)
    except Exception:  # noqa: BLE001
        pass

    # ------------------------------------------------------------------------------ summary
    reqs = [e for e in rt.session.exchanges if e.get('url', '').endswith('/execute_action')]
    fails = [r for r in suite.results if r.status == 'FAIL']
    infos = [r for r in suite.results if r.status == 'INFO']
    print()
    print('=' * 78)
    print(f"SUMMARY  {sum(r.status == 'PASS' for r in suite.results)} passed, {len(fails)} failed, "
          f'{len(infos)} informational; {len(reqs)} execute_action requests')
    for r in suite.results:
        print(f'  {r.status:4}  {r.seconds:6.2f}s  {r.name}' + (f' -- {r.detail}' if r.status != 'PASS' else ''))
    if ipy_state.get('unsupported'):
        print(f"  note: IPython not supported by this server ({ipy_state['unsupported']})")
    rt.close()
    return 1 if fails else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--url', required=True, help='sandboxd base URL, e.g. http://127.0.0.1:8000')
    p.add_argument('--api-key', default=os.environ.get('SESSION_API_KEY'),
                   help='session API key (default: $SESSION_API_KEY)')
    p.add_argument('--working-dir', default=None,
                   help="sandboxd's --working-dir (default: the shell's cwd at the first command)")
    p.add_argument('--no-change-timeout', type=int,
                   default=int(os.environ.get('NO_CHANGE_TIMEOUT_SECONDS', '10')),
                   help="sandboxd's NO_CHANGE_TIMEOUT_SECONDS (default: env or 10)")
    p.add_argument('--setup-env', action='store_true',
                   help='also run Runtime.setup_initial_env() (writes ~/.bashrc and git config of the sandbox user)')
    p.add_argument('--jupyter', action='store_true',
                   help='give the client the agent_skills+jupyter plugins, as DockerRuntime with CodeActAgent does')
    p.add_argument('--require-ipython', action='store_true', help='fail (not just report) if IPython does not work')
    p.add_argument('--connect-timeout', type=float, default=30)
    p.add_argument('-v', '--verbose', action='store_true')
    args = p.parse_args()
    import openhands

    ver = getattr(openhands, '__version__', None)
    if ver is None:
        try:
            from importlib.metadata import version
            ver = version('openhands-ai')
        except Exception:  # noqa: BLE001
            ver = '?'
    print(f'openhands-ai {ver}, httpx {httpx.__version__}, python {sys.version.split()[0]}; target {args.url}')
    return run_checks(args)


if __name__ == '__main__':
    sys.exit(main())

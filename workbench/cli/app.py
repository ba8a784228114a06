"""CLI: ``workbench app`` starts the Streamlit app (loopback by default).

The label store reaches the app through ``WORKBENCH_DB``. When ``--host`` is not a loopback
address the command refuses to start unless ``WORKBENCH_APP_TOKEN`` is set; the app then asks
every browser session for that token before it shows any data. Streamlit is started with an
argument list (never a shell), headless, without usage statistics.
"""
from __future__ import annotations

import importlib.util
import ipaddress
import os
import signal
import subprocess
import sys
from pathlib import Path

import click

TOKEN_ENV = "WORKBENCH_APP_TOKEN"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8501


def app_script() -> Path:
    """The router script ``main.py`` of the installed ``workbench_app`` package (found without importing it)."""
    spec = importlib.util.find_spec("workbench_app")
    if spec is None or spec.origin is None:
        return Path("workbench_app") / "main.py"
    return Path(spec.origin).parent / "main.py"


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts local connections (``localhost``, 127.0.0.0/8, ``::1``).

    Anything else, including ``0.0.0.0``, ``::`` and host names, counts as a network address.
    """
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def streamlit_command(script: Path, *, host: str, port: int) -> list[str]:
    """The argument list that runs ``streamlit run`` on ``script`` (no shell, no user text parsed)."""
    return [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.address", host,
        "--server.port", str(int(port)),
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
        "--global.developmentMode", "false",
        "--client.toolbarMode", "minimal",
    ]


def app_environment(db: Path | None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The child's environment: ``base`` (default ``os.environ``) plus ``WORKBENCH_DB`` when ``db`` is given."""
    env = dict(os.environ if base is None else base)
    if db is not None:
        env["WORKBENCH_DB"] = str(Path(db).expanduser().resolve())
    return env


def check_host(host: str, env: dict[str, str]) -> str | None:
    """An error message when ``host`` opens the app to a network without a token, else ``None``."""
    if is_loopback(host) or env.get(TOKEN_ENV):
        return None
    return (
        f"refusing to listen on {host}: it is not a loopback address and {TOKEN_ENV} is not set. "
        f"Set {TOKEN_ENV} to a long random secret (every browser session must enter it), "
        f"or leave --host at {DEFAULT_HOST}."
    )


@click.command("app")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Label store (default: $WORKBENCH_DB or labels/workbench.db).")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True, help="Port to listen on.")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help=f"Address to listen on; a non-loopback address needs {TOKEN_ENV}.")
def app(db_path: Path | None, port: int, host: str) -> None:
    """Start the Streamlit app: label units, load data, agreement, calibration, scores.

    Listens on 127.0.0.1 unless --host is given. A non-loopback --host needs WORKBENCH_APP_TOKEN,
    which the app then asks every browser session for; annotator names are not a password.

    Example: workbench app --db labels/workbench.db --port 8501
    """
    env = app_environment(db_path)
    problem = check_host(host, env)
    if problem:
        click.echo(problem, err=True)
        raise SystemExit(2)
    script = app_script()
    if not script.is_file():
        click.echo(f"{script}: the app's router was not found (reinstall the workbench package)", err=True)
        raise SystemExit(2)
    from workbench import store  # the first start creates the store (and says so), migrated before any page

    store_file = store.resolve_db_path(env.get("WORKBENCH_DB"))
    if not store_file.is_file():
        store.open_db(store_file).close()
        click.echo(f"store: created a new label store at {store_file}", err=True)
    else:
        store.open_db(store_file).close()
    where = env.get("WORKBENCH_DB") or "labels/workbench.db"
    gate = "token required" if env.get(TOKEN_ENV) else "no token (loopback only)"
    click.echo(f"app: http://{host}:{port} · store {where} · {gate}", err=True)
    raise SystemExit(run_streamlit(streamlit_command(script, host=host, port=port), env))


def run_streamlit(command: list[str], env: dict[str, str]) -> int:
    """Run the Streamlit server until it exits; SIGTERM/SIGHUP sent to this process are passed on.

    Ctrl-C reaches the server through the terminal's process group; we then wait for it to stop.
    Returns the server's exit code (0 after Ctrl-C).
    """
    child = subprocess.Popen(command, env=env)

    def forward(signum, _frame) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


COMMANDS: list = [app]

if __name__ == "__main__":  # python -m workbench.cli.app --db ... (used by the browser tests)
    app()

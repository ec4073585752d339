"""The ``potato`` command. Only :func:`main` turns a :class:`PotatoError` into an exit code."""

from __future__ import annotations

import json
import logging
import shlex
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import click

from potato import __version__, defaults
from potato.errors import ConfigError, PotatoError

if TYPE_CHECKING:  # the config modules load on use: `potato training agent` needs none of them
    from potato.config.schema import Config

SERVER_PYTHON = (3, 9)
"""The annotation server needs Flask 3.1, which needs Python 3.9; the agent and worker run on 3.8."""

log = logging.getLogger("potato")

CONFIG = click.Path(exists=True, dir_okay=False, path_type=Path)


def _setup_logging(verbose: bool = False) -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(
            level=logging.DEBUG if verbose else logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )


def _load(config_path: Path) -> Config:
    """Load for a command that acts on the project: errors stop it, warnings are printed."""
    from potato.config import load_report

    report = load_report(config_path)
    if report.errors or report.config is None:
        raise ConfigError([issue.message for issue in report.errors], str(config_path))
    # validation.acknowledge is for `potato validate` only: at start every warning shows.
    for issue in report.warnings + report.acknowledged:
        if not issue.path.startswith("validation."):
            click.echo(f"warning: {issue.message}", err=True)
    return report.config


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="potato")
def cli() -> None:
    """Potato: annotate in the browser, train wherever the GPUs are."""


@cli.command(short_help="Write an example project into a new folder, to start from.")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--example", type=click.Choice(["reviews", "agent-steps", "preference"]), default="reviews",
              show_default=True, help="reviews: label reviews positive or negative; agent-steps: mark where a coding "
              "agent's session first goes wrong (a step classifier learns it); preference: compare two answers (a "
              "preference model learns it).")
def init(folder: Path, example: str) -> None:
    """Write an example project into FOLDER (made if missing): config.yaml with an admin key of its
    own, readable by you alone, and its items under data/. It trains on this machine. Nothing is
    overwritten: a FOLDER that already holds either file is refused."""
    import secrets

    from potato.example import EXAMPLES, write_example

    chosen = EXAMPLES[example]
    shown, data = write_example(folder, secrets.token_urlsafe(24), shlex.quote(str(folder / "config.yaml")), example)
    click.echo(f"Wrote the example project \"{chosen.title}\" ({chosen.what}) to {folder}:")
    width = len(str(data))
    click.echo(f"  {str(shown):<{width}}  the project, with an admin key of its own (admin_api_key), readable by "
               "you alone")
    click.echo(f"  {data}  the items")
    # (On a Python the server cannot run on, `potato start` says which one it needs.)
    problem = _local_training_problem(_load(shown)) if sys.version_info[:2] >= SERVER_PYTHON else None
    if problem:
        click.echo(f"Training on this machine needs more first: {problem}")
    click.echo(f"Start it:  potato start {shlex.quote(str(shown))}")
    click.echo("For your own data, edit config.yaml and run `potato validate` after each edit.")


def _local_training_problem(config: Config) -> str | None:
    """Why the config's default trainer cannot run on this machine's backend, if it cannot."""
    from potato.server.training.backends import backend_for
    from potato.training.trainers import get_trainer

    mt = config.model_training
    settings = mt.all_backends().get(mt.backend)
    if settings is None:
        return None
    return backend_for(settings).cannot_train(mt.trainer, get_trainer(mt.trainer).requires)


@cli.command(short_help="Check a config and its data files.")
@click.argument("config_path", metavar="CONFIG", type=CONFIG)
@click.option("--strict", is_flag=True, help="Also fail on warnings not listed under validation.acknowledge.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def validate(config_path: Path, strict: bool, as_json: bool) -> None:
    """Check CONFIG and report every problem with its key path and fix."""
    from potato.config import format_report, load_report, report_to_json

    report = load_report(config_path)
    if report.config is not None:  # the data files too: what `start` would refuse, validate says first
        from dataclasses import replace

        from potato.config.schema import Issue
        from potato.errors import DataError
        from potato.items import load_items

        config = report.config
        props = config.item_properties
        try:
            items = load_items(report.config.data_files, props.id_key, props.text_key)
        except DataError as exc:
            report = replace(report, config=None, errors=[*report.errors, Issue("data_files", str(exc))])
        else:
            from potato.display.fields import display_problems

            fields = [(i, f.key, f.type) for i, f in enumerate(config.page.display_fields)]
            missing = display_problems(fields, ((item.id, item.data) for item in items), config.media_directory,
                                       private=config.output_annotation_dir)
            if missing:
                report = replace(report, config=None, errors=[*report.errors, *(Issue(at, f"{at}: {p}") for at, p in missing)])
    if as_json:
        click.echo(json.dumps(report_to_json(report), indent=2))
    else:
        click.echo(format_report(report, strict=strict))
    failed = bool(report.errors) or (strict and bool(report.warnings))
    sys.exit(1 if failed else 0)


def server_python_check(version: Sequence[int]) -> None:
    """Refuse ``potato start`` on a Python the server cannot run on, saying which one it needs."""
    if tuple(version[:2]) < SERVER_PYTHON:
        have = ".".join(str(v) for v in version[:3])
        need = ".".join(str(v) for v in SERVER_PYTHON)
        raise PotatoError(
            f"The annotation server needs Python {need} or newer; this is Python {have}. Install Potato under "
            f"Python {need}+ for `potato start` (python{need} -m pip install 'potato-annotation[server]'). On this "
            "Python, `potato training agent` and the training worker run as they are.")


@cli.command(short_help="Start the annotation server.")
@click.argument("config_path", metavar="CONFIG", type=CONFIG)
@click.option("-p", "--port", default=None, type=click.IntRange(1, 65535), envvar="POTATO_PORT",
              help=f"Port to listen on (also POTATO_PORT; default: the config's port, else {defaults.PORT}).")
@click.option("--host", default=None,
              help=f"Address to bind; 0.0.0.0 for all (default: the config's host, else {defaults.HOST}).")
@click.option("--dev", is_flag=True, help="Use Flask's development server instead of gunicorn.")
@click.option("--workers", default=3, show_default=True, type=click.IntRange(1, 64), help="gunicorn worker processes.")
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 256), help="Threads per worker.")
@click.option("--public-url", default=None, metavar="URL",
              help="The address training machines reach this server under, for `potato training register` "
                   "(default: the config's server.public_url, else this host and port).")
def start(config_path: Path, port: int | None, host: str | None, dev: bool, workers: int, threads: int,
          public_url: str | None) -> None:
    """Start the annotation server for CONFIG, a project's config.yaml (`potato init FOLDER` writes an example
    project to start from); refuses to start on config errors."""
    server_python_check(tuple(sys.version_info[:3]))
    _setup_logging()
    config = _load(config_path)
    # The flag wins over the config (port, or server: {host, port}, as upstream Potato writes them).
    port = port or config.port or defaults.PORT
    host = host or config.host or defaults.HOST
    from potato.server.serving.ports import port_problem

    problem = port_problem(host, port, lambda free: _start_again(click.get_current_context(), free))
    if problem:
        raise PotatoError(problem)
    public_url = _public_url_option(public_url) or config.public_url
    from potato.db import Database
    from potato.server.training.address import record_address

    record_address(Database(config.database_path), public_url, host, port)
    from potato.server import create_app
    from potato.server.training.blueprint import start_dispatcher, stop_dispatcher

    loopback = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
    app = create_app(config, {"POTATO_AGENT_URL": f"http://{loopback}:{port}",
                              "POTATO_LONG_POLL_SLOTS": max(1, threads // 4)})
    click.echo(f"Serving '{config.annotation_task_name}' on http://{host}:{port}/ (admin: /admin)")
    from potato.server import assist, autoexport

    def worker_started() -> None:
        start_dispatcher(app)
        autoexport.start(app)

    def worker_exits() -> None:
        stop_dispatcher(app)
        autoexport.stop(app)
        assist.stop(app)

    if dev:
        worker_started()
        app.run(host=host, port=port, debug=False, threaded=True)
        return
    try:
        from potato.server.serving.gunicorn_app import serve
    except ImportError:
        raise PotatoError(
            "gunicorn is not installed. Install the server extra (pip install 'potato-annotation[server]') "
            "or start with --dev for Flask's development server."
        ) from None
    serve(app, host, port, workers, threads, on_worker_start=worker_started, on_worker_exit=worker_exits)


def _start_again(ctx: click.Context, port: int) -> str:
    """The user's own `potato start` command line with the port changed to ``port``, shell-quoted: every
    option they gave on the command line, in the form they can paste (pure but for the context)."""
    from click.core import ParameterSource

    words = []
    for param in ctx.command.params:
        if param.name in (None, "port") or ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[param.name]
        if isinstance(param, click.Argument):
            words.append(str(value))
        elif isinstance(param, click.Option) and param.is_flag:
            words.append(max(param.opts, key=len))
        elif isinstance(param, click.Option):
            words += [max(param.opts, key=len), str(value)]
    return " ".join([ctx.command_path, shlex.join([*words, "-p", str(port)])])


def _export_comparison(config: Config, output: Path | None) -> None:
    """``potato export --assist-comparison``: the figures the Progress page shows, as JSON. The
    options the help shows are those kept now: the shown runs' suggestions, the LLM's answers."""
    from potato.project import Project
    from potato.server.assist.comparison import assist_comparison

    if config.ai_support.holdout is None:
        raise PotatoError("This project has no control group: set ai_support.assist_holdout: {share: 0.2} to have "
                          "one.")
    project = Project.open(config)
    if config.model_training.enabled and config.model_training.writeback.schemas:  # as the server does
        from potato.server.training.runs.writeback import suggestions_for

        project.suggestions_for = lambda item_id: suggestions_for(project, item_id)
    llm = None
    if config.ai_support.service is not None:
        from potato.server.assist.helper import Helper

        llm = Helper(project, config.ai_support)
    text = json.dumps(assist_comparison(project, llm), ensure_ascii=False, indent=2) + "\n"
    if output:
        output.write_text(text, encoding="utf-8")
        click.echo(f"Exported the comparison to {output}", err=True)
    else:
        click.echo(text, nl=False)


@cli.command(short_help="Write every label as JSON lines, or in upstream Potato's layout.")
@click.argument("config_path", metavar="CONFIG", type=CONFIG)
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="File to write (default: stdout); with --upstream-format, the folder (default: "
                   "output_annotation_dir/exports/FORMAT).")
@click.option("--upstream-format", type=click.Choice(["jsonl", "json", "csv", "tsv"]), default=None,
              help="Write annotations.FORMAT as upstream Potato exports it (one record per annotator and item).")
@click.option("--phases", "phase_answers", is_flag=True,
              help="Write the answers to the study's pages (consent, surveys) instead of the labels.")
@click.option("--codebook", "codebook", is_flag=True,
              help="Write the codebook (every code of the codebook schemes, with who added it and when) as JSON.")
@click.option("--participants", "participants", is_flag=True,
              help="Write one line per participant: platform ids, outcome (completed, screened_out, failed, no_items, "
                   "in_progress), when each study page was done, every training answer.")
@click.option("--assist-comparison", "assist_comparison", is_flag=True,
              help="Write how the annotators who saw AI help and the control group (ai_support.assist_holdout) "
                   "compare, as JSON.")
def export(config_path: Path, output: Path | None, upstream_format: str | None, phase_answers: bool,
           codebook: bool, participants: bool, assist_comparison: bool) -> None:
    """Write every label as JSON lines: user, id, schema, label, source. With --upstream-format, write
    upstream Potato's export instead, for scripts that read its output (with its phase_responses file
    when the config sets export_include_phase_data); with --phases, the study pages' answers; with
    --participants, every participant and how their session ended (those who labelled nothing too);
    with --assist-comparison, the AI help's control group against the helped annotators."""
    config = _load(config_path)
    if sum((phase_answers, codebook, participants, assist_comparison, upstream_format is not None)) > 1:
        raise PotatoError("Choose one of --phases, --codebook, --participants, --assist-comparison and "
                          "--upstream-format: each writes a file of its own.")
    from potato.db import Database
    from potato.labels import LabelStore, export_lines
    from potato.study.participants import participant_ids
    from potato.study.store import PhaseStore

    store = LabelStore(Database(config.database_path))
    if codebook:
        from potato import codebook as book

        if not config.codebook_mode:
            raise PotatoError("This project has no codebook: no annotation scheme says codebook: true.")
        text = json.dumps(book.export(config.annotation_schemes, book.Codebook(store.db), config.codebook_mode),
                          ensure_ascii=False, indent=2) + "\n"
        if output:
            output.write_text(text, encoding="utf-8")
            click.echo(f"Exported the codebook to {output}", err=True)
        else:
            click.echo(text, nl=False)
        return
    if assist_comparison:
        _export_comparison(config, output)
        return
    if upstream_format:
        from potato import upstream_export
        from potato.config.schema import export_format

        fmt = export_format(upstream_format)
        folder = output or upstream_export.default_folder(config, fmt)
        try:
            path, records = upstream_export.write(config, store.iter_labels(), fmt, folder, participant_ids(store.db),
                                                  PhaseStore(store.db).all_answers() if config.export_phase_data
                                                  else None)
        except OSError as exc:
            raise PotatoError(f"Cannot write the export into {folder} ({exc.strerror or exc}). With "
                              "--upstream-format, -o names a folder: pick one you can write to.") from None
        click.echo(f"Exported {records} annotation record(s) to {path}", err=True)
        return
    out: Any = output.open("w", encoding="utf-8") if output else sys.stdout
    count = 0
    try:
        if participants:
            from potato.project import Project
            from potato.server.study import roster

            lines: Iterator[str] = (json.dumps(row, ensure_ascii=False) + "\n"
                                    for row in roster.records(Project.open(config)))
        elif phase_answers:
            lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in PhaseStore(store.db).all_answers())
        else:
            from potato.study.groups import AssistGroups

            groups = AssistGroups(store.db).all() if config.ai_support.holdout is not None else None
            lines = export_lines(store.iter_labels(), participant_ids(store.db), groups)
        for line in lines:
            out.write(line)
            count += 1
    finally:
        if output:
            out.close()
    if output:
        what = "participants" if participants else "answers" if phase_answers else "labels"
        click.echo(f"Exported {count} {what} to {output}", err=True)


@cli.command("import-labels", short_help="Store labels from a .jsonl, .csv or .tsv file.")
@click.argument("config_path", metavar="CONFIG", type=CONFIG)
@click.argument("labels_path", metavar="LABELS", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--user", required=True, help="Annotator name the labels are stored under.")
@click.option("--skip-invalid", is_flag=True, help="Import the valid lines and report the rest.")
def import_labels(config_path: Path, labels_path: Path, user: str, skip_invalid: bool) -> None:
    """Store LABELS as USER's labels: .jsonl or .csv entries of id, schema, label (as `potato export`
    writes them), or upstream Potato's export (.jsonl, .csv or .tsv). Spans are checked against each
    item's text. Safe while the server runs."""
    from potato.errors import LabelImportError
    from potato.label_import import check_entries, compare, read_entries, span_texts_by_id
    from potato.project import Project
    from potato.server.auth import clean_user_name

    config = _load(config_path)
    name = clean_user_name(user)
    if name is None:
        raise click.BadParameter("must be 1 to 64 printable characters", param_hint="--user")
    project = Project.open(config)
    batch = check_entries(config, span_texts_by_id(config, project.items), read_entries(labels_path), name,
                          items=project.items)
    if batch.problems and not skip_invalid:
        raise LabelImportError(batch.problems)
    changes = compare(project.labels.iter_labels(user=name), batch.labels)
    project.labels.touch_user(name)
    project.save_labels(batch.labels)
    for problem in batch.problems:
        click.echo(f"skipped {problem}", err=True)
    skipped = f", skipped {len(batch.problems)} invalid line(s)" if batch.problems else ""
    click.echo(f"Imported {len(batch.labels)} label(s) for user '{name}' ({changes.text()}){skipped}.")


@cli.group(short_help="Train models: check a backend, register an agent, run one.")
def training() -> None:
    """Model training from the command line."""


@training.command("check", short_help="What a run on BACKEND would get.")
@click.argument("backend")
@click.argument("config_path", metavar="CONFIG", type=CONFIG)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def training_check(backend: str, config_path: Path, as_json: bool) -> None:
    """Report what a run on BACKEND would get (e.g. its device); exit 0 when a run could start.

    BACKEND is `local` or a name under model_training.backends in CONFIG (an ssh, slurm or agent
    backend); an unknown name lists the ones CONFIG has."""
    from potato.server.training.backends import backend_named

    config = _load(config_path)
    report = backend_named(config, backend).check(config)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        for line in report.lines:
            click.echo(line)
    sys.exit(0 if report.ok else 1)


def _public_url_option(value: str | None) -> str | None:
    """--public-url / --server-url checked as server.public_url is."""
    if value is None:
        return None
    from potato.config._checks import Invalid
    from potato.config._page import check_public_url

    try:
        return check_public_url(value)
    except Invalid as bad:
        raise click.BadParameter(bad.problems[0][1]) from None


@training.command("register", short_help="Issue the token an agent backend needs.")
@click.argument("backend")
@click.argument("config_path", metavar="CONFIG", type=CONFIG)
@click.option("--server-url", "--public-url", "server_url", default=None, metavar="URL",
              help="This server's address as the training machine reaches it (default: server.public_url, else "
                   "the address the server last started on).")
@click.option("--extra", default="train-sklearn", show_default=True,
              type=click.Choice(["train-sklearn", "train-text", "train-llm", "none"]),
              help="The trainer packages the printed pip command installs with Potato (train-text: "
                   "hf-text-classification's torch, transformers, peft; train-llm: llm-zero-shot's, with gguf).")
def training_register(backend: str, config_path: Path, server_url: str | None, extra: str) -> None:
    """Issue the token an agent for BACKEND needs; registering again replaces the old token. Prints the
    commands for the training machine: install this server's own Potato, then start the agent."""
    from potato.db import Database
    from potato.server.training.backends import backends_of
    from potato.server.training.address import recorded_address, server_address, this_host
    from potato.server.training.agent_protocol.registration import register_text
    from potato.server.training.runs.tokens import BackendTokens

    config = _load(config_path)
    backends = backends_of(config)
    agents = [n for n, b in backends.items() if b.claimed_by_agents]
    if backend not in agents:
        raise PotatoError(f"Backend {backend!r} is not an agent backend in {config_path}. Agent backends: "
                          f"{', '.join(agents) or 'none (add one with type: agent under model_training.backends)'}.")
    db = Database(config.database_path)
    address = server_address(_public_url_option(server_url), config.public_url, recorded_address(db),
                             config.host, config.port, this_host())
    token = BackendTokens(db).issue(backend)
    click.echo(register_text(backend, token, address, None if extra == "none" else extra))


@training.command("agent", short_help="Run jobs for an agent backend on this machine.", context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                             "help_option_names": []})
@click.pass_context
def training_agent(ctx: click.Context) -> None:
    """Run training jobs for an agent backend on this machine (--help for its options)."""
    from potato.training.agent.program import main as agent_main

    sys.exit(agent_main(list(ctx.args)))


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except PotatoError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (OSError, sqlite3.OperationalError) as exc:
        from potato.db import disk_full

        if not disk_full(exc):
            raise
        filename = exc.filename if isinstance(exc, OSError) else None
        where = f" ({filename})" if filename else ""
        click.echo(f"Error: the disk is full{where}; nothing was stored. Free some space and run the command again.",
                   err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()

"""Upstream Potato's ``crowdsourcing`` block, its completion keys, and url_direct sign-in as a platform.

Upstream logs a line for a provider key it cannot use and runs on; a paid study that runs on
without its completion code pays nobody. So every key is checked here, and a missing one is
named with the place to find its value.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from potato.config._checks import (
    Check,
    Findings,
    Invalid,
    anything,
    boolean,
    check_keys,
    choice,
    integer,
    mapping,
    show,
    subset,
    text,
    text_list,
)
from potato.config._files import read_project_file
from potato.study import platforms
from potato.study.platforms import (
    PLATFORMS,
    Crowdsourcing,
    ExpertSettings,
    MicroworkersSettings,
    Platform,
    SonaSettings,
    UrlDirect,
    template_problem,
)
from potato.study.phases import ENDS_ON_WRONG_ANSWER, Phases, PhaseKind

KEYS = ("crowdsourcing", "auto_redirect_on_completion", "auto_redirect_delay")
"""Top-level keys read here (``completion_code`` and ``login`` are the page's, read here too)."""
UPSTREAM_EXAMPLE_SECRET = "replace-with-a-private-secret"

_COMPLETION: Mapping[str, Check] = {
    "code": text(numbers=True), "failed_code": text(numbers=True), "screened_out_code": text(numbers=True),
    "no_items_code": text(numbers=True),
    "redirect_url": text(), "auto_redirect": boolean, "message": text(),
}
_COMMON: dict[str, Check] = {
    "id_param": text(), "capture_params": text_list("[batch, session]", unique=True), "platform_label": text(),
    "completion": anything,
}
SONA_HELP = "copy it from your SONA study's information page (its completion URL holds experiment_id and credit_token)"

OwnSettings = Callable[[Mapping[str, Any], Path, str, Findings], Any]
"""A platform's own settings from its block's checked keys (the values, the folder relative paths
start from, the block's place in the file, the findings); None once an error is reported there."""


@dataclass(frozen=True)
class PlatformKind:
    """A platform as the config knows it: the keys its block takes beyond the common ones, how they
    become its own settings, and upstream's API keys this server does not use. The done page's side
    of the same name is a :class:`~potato.study.platforms.Platform`; :func:`register_platform`
    registers both, so a new platform is its module and its settings."""

    name: str
    keys: Mapping[str, Check] = field(default_factory=dict)
    own: OwnSettings | None = None
    api_keys: tuple[str, ...] = ()
    api_what: str = ""
    """What the API keys belong to, for the message that asks to remove them."""


PLATFORM_KINDS: dict[str, PlatformKind] = {}
"""The config's side of the platforms that have one, by name; any other takes the common keys only."""


def register_platform(platform: Platform, kind: PlatformKind | None = None) -> None:
    """Let a study's config name ``platform`` (``crowdsourcing: {provider: <name>}``), with the keys
    and checks of ``kind`` (none beyond the common ones when it is left out)."""
    kind = kind or PlatformKind(platform.name)
    if kind.name != platform.name:
        raise ValueError(f"the platform {platform.name!r} and its config kind {kind.name!r} must have one name")
    if kind.name in PLATFORM_KINDS and PLATFORM_KINDS[kind.name] != kind:
        raise ValueError(f"a platform named {kind.name!r} exists already")
    platforms.register_platform(platform)
    PLATFORM_KINDS[kind.name] = kind


def providers() -> tuple[str, ...]:
    """The names a ``crowdsourcing`` block may give as its provider, in registration order."""
    return tuple(name for name, platform in PLATFORMS.items() if platform.selectable)


def check(raw: Mapping[Any, object], login: Mapping[str, Any], base: Path, findings: Findings) -> tuple[bool, Crowdsourcing | None]:
    """(no errors, the settings) for ``raw``; settings are None for a study whose annotators sign in by name.

    ``login`` is the checked ``login`` block; ``base`` the folder relative paths start from.
    """
    top, problems = check_keys(subset(raw, lambda k: k in ("auto_redirect_on_completion", "auto_redirect_delay")),
                               {"auto_redirect_on_completion": boolean,
                                "auto_redirect_delay": integer(0, 600_000)}, "the config")
    findings.errors_at("", problems)
    code = raw.get("completion_code")
    common: dict[str, Any] = {
        "code": str(code) if isinstance(code, (str, int)) and not isinstance(code, bool) and str(code) else None,
        "auto_redirect": top.get("auto_redirect_on_completion", False),
        "auto_redirect_delay_ms": top.get("auto_redirect_delay", 5000),
    }
    block = raw.get("crowdsourcing")
    url_direct = login.get("type") == "url_direct"
    if block is None:
        if not url_direct:
            for key in ("auto_redirect_on_completion", "auto_redirect_delay"):
                if key in raw:
                    findings.warn(key, "applies to participants who arrive by a platform's link (login: {type: "
                                       "url_direct}, or a crowdsourcing block); it is ignored")
            return not problems, None
        return not problems, Crowdsourcing(provider=UrlDirect.name, id_param=login.get("url_argument", "PROLIFIC_PID"),
                                           **common)
    if login.get("type") not in (None, "url_direct"):
        findings.error("login.type", f"is {show(login.get('type'))}, but a crowdsourcing study's participants "
                                     "arrive by the platform's link; set login: {type: url_direct} or remove it")
        return False, None
    settings = _block(block, login, common, base, findings)
    return not problems and settings is not None, settings


def _block(block: object, login: Mapping[str, Any], common: dict[str, Any], base: Path,
           findings: Findings) -> Crowdsourcing | None:
    try:
        outer = mapping(block, "{provider: prolific, prolific: {completion: {code: C1ABCDEF}}}")
        provider = choice(providers(), "crowdsourcing provider")(outer.get("provider"))
    except Invalid as bad:
        at = "crowdsourcing" if not isinstance(block, dict) else "crowdsourcing.provider"
        findings.errors_at(at, bad.problems)
        return None
    for key in outer:
        if key != "provider" and key != provider:
            if key in providers():
                findings.warn(f"crowdsourcing.{key}", f"is for provider {key}; this study's provider is "
                                                      f"{provider}, so it is ignored")
            else:
                findings.error(f"crowdsourcing.{key}", f"unknown key; valid: provider, and a block named after the "
                                                       f"provider ({provider}: {{...}})")
    at = f"crowdsourcing.{provider}"
    kind = PLATFORM_KINDS.get(provider, PlatformKind(provider))
    table = {**_COMMON, **kind.keys}
    hints = {key: f"belongs to {kind.api_what}, which this server does not support; remove it (participants still "
                  "arrive and get their completion code)" for key in kind.api_keys}
    try:
        values, problems = check_keys(mapping(outer.get(provider) or {}, "{completion: {code: C1ABCDEF}}"), table, at,
                                      hints=hints)
    except Invalid as bad:
        findings.errors_at(at, bad.problems)
        return None
    findings.errors_at(at, problems)
    completion: dict[str, Any] = {}
    if "completion" in values:
        try:
            completion, more = check_keys(mapping(values["completion"], "{code: C1ABCDEF}"), _COMPLETION,
                                          f"{at}.completion")
        except Invalid as bad:
            findings.errors_at(f"{at}.completion", bad.problems)
            return None
        findings.errors_at(f"{at}.completion", more)
        problems = problems + more
    if problems:
        return None
    platform = PLATFORMS[provider]
    id_param = values.get("id_param") or login.get("url_argument") or platform.id_param
    if login.get("url_argument") and login["url_argument"] != id_param:
        findings.error("login.url_argument", f"is {show(login['url_argument'])} while {at}.id_param is "
                                             f"{show(id_param)}; both name the link's participant parameter, so make "
                                             "them the same (or remove login)")
        return None
    settings = Crowdsourcing(
        provider=provider, id_param=id_param, capture_params=values.get("capture_params", ()),
        platform_label=values.get("platform_label", ""),
        code=completion.get("code", common["code"]), failed_code=completion.get("failed_code"),
        screened_out_code=completion.get("screened_out_code"), no_items_code=completion.get("no_items_code"),
        redirect_url=completion.get("redirect_url"),
        auto_redirect=completion.get("auto_redirect", common["auto_redirect"]),
        auto_redirect_delay_ms=common["auto_redirect_delay_ms"], message=completion.get("message"),
    )
    if settings.redirect_url:
        problem = template_problem(settings.redirect_url, settings.captured())
        if problem:
            findings.error(f"{at}.completion.redirect_url", problem)
            return None
    if kind.own is not None:
        own = kind.own(values, base, at, findings)
        if own is None:
            return None
        settings = replace(settings, own=own)
    if platform.expects_code and settings.code is None:
        findings.warn(f"{at}.completion.code", f"is not set, so participants finish without a completion code and "
                                               f"{settings.label} cannot tell who finished; set it (or the top-level "
                                               "completion_code) to the code your study on the platform expects")
    return settings


def _sona(values: Mapping[str, Any], base: Path, at: str, findings: Findings) -> SonaSettings | None:
    own = SonaSettings(values.get("hostname", ""), values.get("experiment_id", ""), values.get("credit_token", ""))
    missing = [key for key, value in (("hostname", own.hostname), ("experiment_id", own.experiment_id),
                                      ("credit_token", own.credit_token)) if not value]
    for key in missing:
        findings.error(f"{at}.{key}", f"missing: SONA grants credit through a link that needs it; {SONA_HELP}")
    host = own.hostname
    if host and (not host.replace("-", "").replace(".", "").isalnum() or "." not in host):
        findings.error(f"{at}.hostname", f"must be your SONA site's host name alone, e.g. yourdept.sona-systems.com, "
                                         f"got {show(host)}")
        return None
    return None if missing else own


def _microworkers(values: Mapping[str, Any], base: Path, at: str, findings: Findings) -> MicroworkersSettings | None:
    own = MicroworkersSettings(values.get("vcode_secret", ""), values.get("vcode_prefix", ""),
                               values.get("vcode_length", 12), values.get("campaign_id", ""))
    if not own.vcode_secret:
        findings.error(f"{at}.vcode_secret", "missing: each worker's VCODE is made from this private text; set "
                                             "vcode_secret: <a long random text> (keep it out of shared files)")
        return None
    if own.vcode_secret == UPSTREAM_EXAMPLE_SECRET:
        findings.warn(f"{at}.vcode_secret", "is upstream's example text, so anyone can compute your workers' "
                                            "VCODEs; set a private random text before the campaign starts")
    return own


def _expert(values: Mapping[str, Any], base: Path, at: str, findings: Findings) -> ExpertSettings | None:
    invites = _invites(values, base, at, findings)
    return None if invites is None else ExpertSettings(invites)


def _invites(values: Mapping[str, Any], base: Path, at: str, findings: Findings) -> dict[str, str] | None:
    """Token -> name; a token listed without a name annotates under a name made from it (never the token
    itself, which would show a credential on every page and in every export)."""
    raw: dict[object, object] = {}
    inline = values.get("invites")
    if inline is not None:
        if not isinstance(inline, dict):
            findings.error(f"{at}.invites", f"must map each invite token to the expert's name, e.g. "
                                            f"{{k3J9mQ2xLp8v: med-expert-1}}, got {show(inline)}")
            return None
        raw.update(inline)
        note_read = getattr(inline, "note_read", None)  # the tokens are data, each one used (potato.config.unread)
        if note_read is not None:
            for token in inline:
                note_read(token)
    if "invites_file" in values:
        read = read_project_file(base, values["invites_file"], f"{at}.invites_file", "write the tokens there (token: "
                                 "name per line, or one token per line)", findings)
        if read is None:
            return None
        content = read[1]
        try:
            loaded = yaml.safe_load(content)
        except yaml.YAMLError:
            loaded = None
        if isinstance(loaded, dict):
            raw.update(loaded)
        else:
            raw.update({line.strip(): None for line in content.splitlines()
                        if line.strip() and not line.strip().startswith("#")})
    invites: dict[str, str] = {}
    for number, (token, name) in enumerate(raw.items(), 1):
        # Messages count the invites rather than quote them: a token is a credential.
        if not isinstance(token, (str, int)) or isinstance(token, bool) or len(str(token)) < 8:
            findings.error(f"{at}.invites", f"invite {number}'s token is shorter than 8 characters, too short to be "
                                            "secret; give each expert at least 8 random characters")
            return None
        if name is not None and not isinstance(name, str):
            findings.error(f"{at}.invites", f"invite {number}'s name must be text, got {show(name)}")
            return None
        invites[str(token)] = name or "expert-" + hashlib.sha256(str(token).encode()).hexdigest()[:8]
    if not invites:
        findings.error(f"{at}.invites", "no invite tokens: nobody could sign in; list them as invites: {<token>: "
                                        "<name>} or in invites_file")
        return None
    return invites


def warn_unpaid_outcomes(crowd: Crowdsourcing | None, phases: Phases | None, findings: Findings) -> None:
    """A study whose pages can end it early (a consent or a screening question that must be answered
    one way, training with a pass mark) and that names no code for it: those participants get no code
    (the completion code is for finished work only), which the admin should know before paying."""
    if crowd is None or phases is None or crowd.platform.pays_otherwise:
        return
    at = "completion_code" if not crowd.platform.selectable else f"crowdsourcing.{crowd.provider}.completion"
    screens = any(q.right_labels for p in phases.order if p.kind in ENDS_ON_WRONG_ANSWER for q in p.questions)
    trains = any(p.kind is PhaseKind.TRAINING for p in phases.order) and phases.rule.failure_action == "move_to_done"
    if screens and not (crowd.screened_out_code or crowd.failed_code):
        findings.warn(at, "names no screened_out_code (or failed_code), so a participant who declines the consent or "
                          f"does not pass the screening gets no code and is told to return the study on {crowd.label}; "
                          "set screened_out_code to the code your platform expects for them")
    if trains and not crowd.failed_code:
        findings.warn(at, "names no failed_code, so a participant who fails the training gets no code and is told to "
                          f"return the study on {crowd.label}; set failed_code to the code your platform expects for them")


for _kind in (
        PlatformKind("prolific", api_keys=("token", "study_id", "config_file_path", "screen_out_on_block",
                                           "workload_checker", "max_concurrent_sessions", "workload_checker_period"),
                     api_what="Prolific's API (watching submissions, screening out by API)"),
        PlatformKind("clickworker", api_keys=("postback_url", "postback_method", "api_key", "experimental"),
                     api_what="Clickworker's payment postback (experimental upstream)"),
        PlatformKind("sona", {"hostname": text(), "experiment_id": text(numbers=True),
                              "credit_token": text(numbers=True)}, _sona,
                     api_keys=("server_credit",), api_what="granting SONA credit from the server"),
        PlatformKind("microworkers", {"vcode_secret": text(), "vcode_prefix": text(allow_empty=True),
                                      "vcode_length": integer(4, 64), "campaign_id": text(numbers=True)},
                     _microworkers),
        PlatformKind("expert", {"invites": anything, "invites_file": text()}, _expert)):
    register_platform(PLATFORMS[_kind.name], _kind)

"""Crowdsourcing platforms: who a participant is on arrival, and how they go back when done (pure).

A paid study starts on a platform (Prolific, MTurk, Connect, SONA, Microworkers, Clickworker, a
panel, or an expert's invite link) that sends the participant here with their id in the link, and
ends with a hand-off the platform checks before it pays: a completion code, a return link, or
(MTurk) a form posted back. Each platform is a small registered class here, its parameter names
as upstream Potato's ``crowdsourcing`` block names them and its own settings beside it; the server
stores the arrival and renders the hand-off. Nothing here does I/O, so every platform's rules are
tested without a browser.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import string
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping
from urllib.parse import quote, urlsplit

PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
"""MTurk's assignmentId while a worker only previews a HIT: they have not accepted it yet."""
PROLIFIC_RETURN = "https://app.prolific.com/submissions/complete?cc={code}"
SONA_CREDIT = ("https://{hostname}/webstudy_credit.aspx?experiment_id={experiment_id}&credit_token={credit_token}"
               "&survey_code={survey_code}")
"""SONA's web-study credit link: opening it in the participant's browser grants the credit."""
MTURK_HOSTS = ("www.mturk.com", "workersandbox.mturk.com")
"""Where MTurk's ``turkSubmitTo`` may point: a link naming any other host cannot receive the
completion form (it would hand the code to whoever wrote the link)."""
MTURK_ORIGINS = tuple(f"https://{host}" for host in MTURK_HOSTS)
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
"""Where a return link may be plain http://: a panel on the study's own machine (a test), never a platform."""
PLACEHOLDERS = ("code", "worker_id", "session_id", "study_id")
"""What a ``redirect_url`` may hold besides the captured parameters' names."""
DONE_MESSAGE = "Your annotations have been saved. You may close this window."
CODE_MESSAGE = "Copy the code above and paste it in your crowdsourcing platform to receive credit."
VCODE_MESSAGE = "Paste this VCODE into the Microworkers task window to submit your work."
EXPERT_MESSAGE = "Thank you! Your work has been recorded. Payment is handled through your contract."
NO_CODE_MESSAGE = "There is no completion code for this outcome, so do not submit the study as finished. {how}"
"""What a participant who did not finish is told where the study names no code for how it ended: the
completion code is for finished work only, so they return the study the platform's own way."""


BY_LINK = "This study signs you in by the link from {platform}, not by name. Open the study from {platform} again."
"""What a name typed on the sign-in page of a platform's study is told."""


@dataclass(frozen=True)
class SonaSettings:
    """SONA's own keys: its web-study credit link is the hand-off."""

    hostname: str = ""
    experiment_id: str = ""
    credit_token: str = ""


@dataclass(frozen=True)
class MicroworkersSettings:
    """Microworkers' own keys: each worker's VCODE is made from the secret and the campaign."""

    vcode_secret: str = ""
    vcode_prefix: str = ""
    vcode_length: int = 12
    campaign_id: str = ""
    """The campaign the VCODEs are for; a link naming another campaign is refused."""


@dataclass(frozen=True)
class ExpertSettings:
    """An expert study's own keys: each expert's invite token and the name they annotate under."""

    invites: Mapping[str, str] = field(default_factory=dict)


class Platform:
    """One platform: its link parameters as upstream names them, its own settings, and where its
    arrival and hand-off differ from the plain one (a completion code, a return link).

    A platform is a subclass registered with :func:`register_platform` (the config's side of the
    same name, its keys and checks, registers with
    :func:`potato.config.study.crowdsourcing.register_platform`). The flags say what the server and
    the config check ask of it; the hooks return None where the plain way applies.
    """

    name: ClassVar[str]
    """The ``provider`` a config names it by."""
    label: ClassVar[str]
    """Shown on the return button: "Return to <label>"."""
    id_param: ClassVar[str]
    session_param: ClassVar[str | None] = None
    study_param: ClassVar[str | None] = None
    always_captured: ClassVar[tuple[str, ...]] = ()
    returning: ClassVar[str] = "Go back to your crowdsourcing platform and return the study there."
    """How a participant who did not finish gives the study back, as the platform documents it."""
    posts_to_mturk: ClassVar[bool] = False
    """Its hand-off may be MTurk's form posted back, and MTurk shows the study inside its own page."""
    expects_code: ClassVar[bool] = False
    """It tells who finished by the completion code: a study without one is warned about."""
    pays_otherwise: ClassVar[bool] = False
    """It pays by other means than the study's codes (a contract, a credit link): an outcome without a
    code of its own is not warned about."""
    by_name: ClassVar[str] = BY_LINK
    """What a name typed on the sign-in page is told ({platform} is the study's label)."""
    refused_status: ClassVar[int] = 400
    """The status of a link that cannot start a session."""
    done_message: ClassVar[str] = DONE_MESSAGE
    """The done page's line where there is no code."""
    name_form: ClassVar[bool] = False
    """A link without the participant's id shows the sign-in form instead of refusing it."""
    selectable: ClassVar[bool] = True
    """A ``crowdsourcing`` block may name it as its provider."""

    def participant(self, settings: Crowdsourcing, raw: str) -> str:
        """The name the link's id signs in under (:class:`ArrivalRefused` for a link that cannot)."""
        return raw

    def check_link(self, settings: Crowdsourcing, params: Mapping[str, str]) -> None:
        """Refuse (:class:`ArrivalRefused`) a link whose captured parameters this study cannot take."""

    def own_hand_off(self, settings: Crowdsourcing, who: Arrival, outcome: Outcome,
                     code: str | None) -> HandOff | None:
        """The hand-off where the platform has its own (a VCODE, a credit link); None: the plain one."""
        return None

    def return_link(self, settings: Crowdsourcing, code: str) -> tuple[str, str] | None:
        """(the link back with ``code``, the button's name) where the platform has one and the study
        sets no ``redirect_url``; None: the code is shown to copy."""
        return None

    def form_label(self, settings: Crowdsourcing) -> str:
        """The name on MTurk's submit button."""
        return settings.label


PLATFORMS: dict[str, Platform] = {}
"""Every platform a study may come from, by name, in registration order."""


def register_platform(platform: Platform) -> Platform:
    """Let a study's config name ``platform`` (the server's and the done page's side of it)."""
    if platform.name in PLATFORMS and type(PLATFORMS[platform.name]) is not type(platform):
        raise ValueError(f"a platform named {platform.name!r} exists already")
    PLATFORMS[platform.name] = platform
    return platform


class Generic(Platform):
    name, label, id_param = "generic", "your crowdsourcing platform", "PROLIFIC_PID"
    expects_code = True


class Prolific(Platform):
    name, label, id_param, session_param, study_param = "prolific", "Prolific", "PROLIFIC_PID", "SESSION_ID", "STUDY_ID"
    returning = "Go back to Prolific and return your submission there (Stop without completing)."
    expects_code = True

    def return_link(self, settings: Crowdsourcing, code: str) -> tuple[str, str] | None:
        return PROLIFIC_RETURN.format(code=quote(code, safe="")), settings.platform_label or "Prolific"


class MTurk(Platform):
    name, label, id_param, session_param, study_param = "mturk", "MTurk", "workerId", "assignmentId", "hitId"
    always_captured = ("turkSubmitTo",)
    returning = "Go back to MTurk and return the HIT there."
    posts_to_mturk = True


class Connect(Platform):
    name, label, id_param, session_param, study_param = "connect", "Connect", "participantId", "assignmentId", "projectId"
    returning = "Go back to Connect and return the project there."
    expects_code = True


class Sona(Platform):
    name, label, id_param = "sona", "SONA", "sona_code"
    returning = "No SONA credit is granted for it; ask the researcher if you think this is wrong."
    pays_otherwise = True

    def own_hand_off(self, settings: Crowdsourcing, who: Arrival, outcome: Outcome,
                     code: str | None) -> HandOff | None:
        if outcome is not Outcome.COMPLETED:
            return None
        own = settings.own or SonaSettings()
        # SONA's credit link is the hand-off: there is no code to copy.
        url = SONA_CREDIT.format(hostname=own.hostname, experiment_id=quote(own.experiment_id, safe=""),
                                 credit_token=quote(own.credit_token, safe=""),
                                 survey_code=quote(who.worker_id, safe=""))
        return HandOff(message="Open the link below to receive your credit on SONA.", return_url=url,
                       label=settings.label, auto_redirect=settings.auto_redirect,
                       delay_ms=settings.auto_redirect_delay_ms)


class Microworkers(Platform):
    name, label, id_param, session_param, study_param = "microworkers", "Microworkers", "mw_id", "slot_id", "campaign_id"
    returning = "Go back to the Microworkers task window and leave the task there."

    def check_link(self, settings: Crowdsourcing, params: Mapping[str, str]) -> None:
        campaign = (settings.own or MicroworkersSettings()).campaign_id
        if campaign and params.get("campaign_id", campaign) != campaign:
            # The VCODE is made from the campaign: a link naming another one would buy that campaign's code.
            raise ArrivalRefused("This link names another Microworkers campaign than this study's. Open the task "
                                 "from its campaign on Microworkers.")

    def own_hand_off(self, settings: Crowdsourcing, who: Arrival, outcome: Outcome,
                     code: str | None) -> HandOff | None:
        if outcome is not Outcome.COMPLETED:
            return HandOff(code=code, message=CODE_MESSAGE, label=settings.label)  # the study's own code for that outcome
        own = settings.own or MicroworkersSettings()
        return HandOff(code=vcode(own.vcode_secret, who.worker_id, own.campaign_id or who.study_id or "",
                                  own.vcode_prefix, own.vcode_length), message=VCODE_MESSAGE, label=settings.label)


class Clickworker(Platform):
    name, label, id_param = "clickworker", "Clickworker", "worker_id"
    returning = "Go back to Clickworker and return the job there."
    expects_code = True


class Expert(Platform):
    name, label, id_param = "expert", "your contracting platform", "invite"
    returning = "Your answers are recorded; the study's admin will be in touch."
    pays_otherwise = True
    by_name = ("This study signs you in by your personal invite link, not by name. Open the link the study's "
               "admin sent you, or ask them for a new one.")
    refused_status = 403
    done_message = EXPERT_MESSAGE

    def participant(self, settings: Crowdsourcing, raw: str) -> str:
        # The token is a credential: it picks the name and is kept nowhere.
        invites = (settings.own or ExpertSettings()).invites
        if not any(hmac.compare_digest(raw.encode(), token.encode()) for token in invites):
            raise ArrivalRefused("This invite link is not valid. Use the personal link the study's admin sent "
                                 "you, or ask them for a new one.")
        return invites[raw] or raw


class UrlDirect(Platform):
    """A config with ``login: {type: url_direct}`` and no crowdsourcing block: upstream serves
    Prolific's and MTurk's arrivals from the one link."""

    name, label, id_param, session_param, study_param = ("url_direct", "your crowdsourcing platform", "PROLIFIC_PID",
                                                         "SESSION_ID", "STUDY_ID")
    always_captured = ("assignmentId", "hitId", "turkSubmitTo")
    posts_to_mturk = True
    name_form = True
    selectable = False

    def return_link(self, settings: Crowdsourcing, code: str) -> tuple[str, str] | None:
        if settings.id_param.lower() != "prolific_pid":
            return None
        return PROLIFIC_RETURN.format(code=quote(code, safe="")), settings.platform_label or "Prolific"

    def form_label(self, settings: Crowdsourcing) -> str:
        return "MTurk"


for _platform in (Generic, Prolific, MTurk, Connect, Sona, Microworkers, Clickworker, Expert, UrlDirect):
    register_platform(_platform())


class Outcome(enum.Enum):
    """How a participant's session ended: the platform pays each by its own code."""

    COMPLETED = "completed"
    FAILED = "failed"
    """Stopped by the study (a check they did not pass): ``failed_code``."""
    SCREENED_OUT = "screened_out"
    """Sent back as not eligible (a consent declined): ``screened_out_code``, else ``failed_code``."""
    NO_ITEMS = "no_items"
    """Arrived when every item already had its annotators: nothing was there to do (``no_items_code``)."""


@dataclass(frozen=True)
class Crowdsourcing:
    """The ``crowdsourcing`` block (or, without one, ``login: {type: url_direct}``) as validated."""

    provider: str = "url_direct"
    id_param: str = "PROLIFIC_PID"
    capture_params: tuple[str, ...] = ()
    platform_label: str = ""
    code: str | None = None
    failed_code: str | None = None
    screened_out_code: str | None = None
    no_items_code: str | None = None
    redirect_url: str | None = None
    """A return link with placeholders; the platform's own return link where it has one."""
    auto_redirect: bool = False
    auto_redirect_delay_ms: int = 5000
    message: str | None = None
    own: Any = None
    """The platform's own settings (:class:`SonaSettings`, :class:`MicroworkersSettings`,
    :class:`ExpertSettings`, a registered platform's), None for one that has none."""

    @property
    def platform(self) -> Platform:
        return PLATFORMS[self.provider]

    @property
    def label(self) -> str:
        return self.platform_label or self.platform.label

    @property
    def posts_to_mturk(self) -> bool:
        return self.platform.posts_to_mturk

    def captured(self) -> tuple[str, ...]:
        """The link parameters kept with the participant, besides their id."""
        p = self.platform
        names = [n for n in (p.session_param, p.study_param, *p.always_captured, *self.capture_params) if n]
        return tuple(dict.fromkeys(n for n in names if n != self.id_param))


class ArrivalRefused(Exception):
    """A link that cannot start a session; the message is for the participant."""


@dataclass(frozen=True)
class Arrival:
    """Who came from the platform: ``worker_id`` is the name they annotate under."""

    worker_id: str
    session_id: str | None = None
    study_id: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)


def is_preview(settings: Crowdsourcing, args: Mapping[str, str]) -> bool:
    """An MTurk worker looking at the HIT before accepting it: show the task, start nothing."""
    return settings.posts_to_mturk and args.get("assignmentId") == PREVIEW_ASSIGNMENT


def arrival(settings: Crowdsourcing, args: Mapping[str, str]) -> Arrival:
    """The participant a link names, or :class:`ArrivalRefused` saying what is wrong with the link."""
    raw = args.get(settings.id_param, "")
    if not raw:
        raise ArrivalRefused(f"Missing required URL parameter: {settings.id_param}. Please access this page "
                             "through your crowdsourcing platform.")
    p = settings.platform
    worker = p.participant(settings, raw)
    params = {name: args[name] for name in settings.captured() if args.get(name)}
    p.check_link(settings, params)
    return Arrival(worker_id=worker, session_id=params.get(p.session_param or ""),
                   study_id=params.get(p.study_param or ""), params=params)


@dataclass(frozen=True)
class HandOff:
    """What the done page shows and does: a code to copy, a way back, and when to go back by itself."""

    code: str | None = None
    message: str = DONE_MESSAGE
    return_url: str | None = None
    """A link back (the "Return to ..." button)."""
    form_action: str | None = None
    """MTurk: the form is posted back instead of a link followed."""
    form_fields: tuple[tuple[str, str], ...] = ()
    label: str = ""
    auto_redirect: bool = False
    delay_ms: int = 5000

    @property
    def button(self) -> str | None:
        if self.form_action:
            return f"Submit HIT to {self.label}"
        return f"Return to {self.label}" if self.return_url else None


def outcome_code(settings: Crowdsourcing, outcome: Outcome) -> str | None:
    """The code a participant gets for ``outcome``: never the completion code for work not finished
    (upstream falls back to it, which pays a participant who declined the consent)."""
    if outcome is Outcome.FAILED:
        return settings.failed_code
    if outcome is Outcome.SCREENED_OUT:
        return settings.screened_out_code or settings.failed_code
    if outcome is Outcome.NO_ITEMS:
        return settings.no_items_code
    return settings.code


def hand_off(settings: Crowdsourcing, who: Arrival, outcome: Outcome = Outcome.COMPLETED) -> HandOff:
    """The done page for ``who``, as their platform expects it."""
    code = outcome_code(settings, outcome)
    label = settings.label
    if outcome is not Outcome.COMPLETED and code is None:
        # Nothing that pays: no VCODE, no SONA credit link, no MTurk form, no return link with a code.
        return HandOff(message=NO_CODE_MESSAGE.format(how=settings.platform.returning), label=label)
    platform = settings.platform
    own = platform.own_hand_off(settings, who, outcome, code)
    if own is not None:
        return own
    if platform.posts_to_mturk:
        action = mturk_submit_url(who.params.get("turkSubmitTo"))
        assignment = who.params.get("assignmentId")
        if action and assignment:
            fields = (("assignmentId", assignment),) + ((("completionCode", code),) if code else ())
            return HandOff(code=code, message=CODE_MESSAGE if code else DONE_MESSAGE, form_action=action,
                           form_fields=fields, label=platform.form_label(settings),
                           auto_redirect=settings.auto_redirect, delay_ms=settings.auto_redirect_delay_ms)
    if code is None:
        return HandOff(message=settings.message or platform.done_message, label=label)
    back = ((fill_url(settings.redirect_url, who, code), label) if settings.redirect_url
            else platform.return_link(settings, code))
    if back is not None:
        return HandOff(code=code, message=CODE_MESSAGE, return_url=back[0], label=back[1],
                       auto_redirect=settings.auto_redirect, delay_ms=settings.auto_redirect_delay_ms)
    return HandOff(code=code, message=CODE_MESSAGE, label=label)


def vcode(secret: str, worker_id: str, campaign_id: str = "", prefix: str = "", length: int = 12) -> str:
    """Microworkers' per-worker VCODE: the same for the same worker and campaign, unguessable without the
    secret, so a submitted code can be checked again later from the export."""
    digest = hmac.new(secret.encode(), f"{worker_id}:{campaign_id}".encode(), hashlib.sha256).hexdigest()
    return prefix + digest[:length]


def placeholders(template: str) -> list[str]:
    """The ``{name}`` fields of a return-link template, in order (``{{`` is a literal brace)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def template_problem(template: str, names: tuple[str, ...]) -> str | None:
    """What is wrong with a return-link template, for the config check; None when it is usable.

    The scheme and host must be written out: a placeholder there would let a link's parameters
    choose where participants (and their codes) are sent.
    """
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as bad:
        return f"is not a link template ({bad}); write placeholders as {{code}}, literal braces as {{{{ }}}}"
    allowed = (*PLACEHOLDERS, *names)
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        if name not in allowed:
            return f"has the placeholder {{{name}}}; valid: " + ", ".join(f"{{{n}}}" for n in allowed)
        if spec or conversion:
            return f"writes {{{name}}} with a format; write the plain {{{name}}}"
    literal = ""
    for text, name, _, _ in fields:
        literal += text
        if name is not None:
            break
    if "\\" in template or any(c.isspace() or not c.isprintable() for c in template):
        # Browsers read a backslash as a slash: https://evil.example\@panel.example.com goes to evil.example.
        return f"holds a backslash, a space or a control character; write the plain address, got {template!r}"
    parts = urlsplit(literal)
    whole = all(name is None for _, name, _, _ in fields)
    fixed_host = parts.netloc and (whole or len(literal) > len(f"{parts.scheme}://{parts.netloc}"))
    local = parts.hostname in LOCAL_HOSTS
    if not fixed_host or not (parts.scheme == "https" or (parts.scheme == "http" and local)) or "@" in parts.netloc:
        return ("must start with a fixed https:// address (scheme and host written out, no user@, placeholders "
                f"after them), e.g. https://panel.example.com/complete?code={{code}}; got {template!r}")
    return None


def fill_url(template: str, who: Arrival, code: str | None) -> str:
    """The return link for ``who``: each placeholder's value URL-encoded, a missing one empty."""
    values: dict[str, str] = {**who.params, "code": code or "", "worker_id": who.worker_id,
                              "session_id": who.session_id or "", "study_id": who.study_id or ""}

    class Empty(dict):  # type: ignore[type-arg]
        def __missing__(self, key: str) -> str:
            return ""

    return template.format_map(Empty({k: quote(v, safe="") for k, v in values.items()}))


def mturk_submit_url(submit_to: str | None) -> str | None:
    """Where the MTurk form goes: ``turkSubmitTo``'s host (only MTurk's own) + ``/mturk/externalSubmit``."""
    if not submit_to:
        return None
    parts = urlsplit(submit_to)
    if parts.scheme != "https" or parts.hostname not in MTURK_HOSTS or parts.port not in (None, 443):
        return None
    return f"https://{parts.hostname}/mturk/externalSubmit"

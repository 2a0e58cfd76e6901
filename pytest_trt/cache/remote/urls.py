"""URLs of the remote cache: checked at session start, shown without secrets, secrets cut from errors.

A remote cache URL may carry credentials (``https://user:password@host/path``,
``s3://KEY:SECRET@bucket``, ``?token=...``). :func:`check_url` refuses a URL that cannot be
used (a usage error naming the option), :func:`display_url` is the only form the plugin
shows (header, warnings, JSON/HTML/JUnit reports, local manifests, exceptions): userinfo
replaced by ``***``, every query value by ``***``. Errors raised by the transport libraries
quote the URL they were given, so their text goes through a :class:`Redactor` that knows the
raw URL and each secret of it (and of ``$PYTEST_TRT_REMOTE_CACHE_AUTH``).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from ...errors import UsageError

__all__ = ["MASK", "Redactor", "check_url", "display_url", "url_secrets"]

MASK = "***"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HOST_PORT = re.compile(r"^(\[[^\]]*\]|[^:@\[\]]*)(:\d*)?$")
#: secrets shorter than this are removed only where they stand in the URL (replacing every "ab"
#: in a message would garble it and protect nothing a 2-character password could have)
_MIN_FREE_SECRET = 4


def _split_userinfo(url: str) -> tuple[str, str, str]:
    """(``scheme://``, userinfo or "", the rest) of ``url``.

    ``urlsplit`` ends the authority at the first ``/``, ``?`` or ``#``, so a password holding
    one of them (``user:pa/ss@host``) would show up in the path. So when what precedes the
    first of them is not a plain ``host[:port]`` (``user:pa``), the userinfo runs to the last
    ``@`` of the URL; otherwise it runs to the last ``@`` of the authority (a password holding
    ``@``).
    """
    head, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return head + sep, "", rest
    authority_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority = rest[:authority_end]
    at = rest.rfind("@", 0, authority_end)
    if at < 0:
        if not authority or _HOST_PORT.match(authority):
            return head + sep, "", rest  # an '@' in the path, not credentials
        at = rest.rfind("@")
    return head + sep, rest[:at], rest[at + 1:]


def display_url(url: str) -> str:
    """``url`` as the plugin shows it: no userinfo (``***@``), every query value and any fragment
    ``***``, control characters escaped (``\\n``). Never raises."""
    url = _CONTROL.sub(lambda m: repr(m.group())[1:-1], url)
    prefix, userinfo, rest = _split_userinfo(url)
    rest, hash_sign, fragment = rest.partition("#")
    rest, question_mark, query = rest.partition("?")
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK) for k, _ in pairs], safe="*") if pairs else MASK
    return (prefix + (f"{MASK}@" if userinfo else "") + rest + question_mark + query
            + hash_sign + (MASK if fragment else ""))


def url_secrets(url: str, auth: str | None = None) -> list[str]:
    """The secret parts of ``url`` (its userinfo, password, query values, fragment) and of
    ``auth`` (``user:password``), longest first, each also percent-decoded and -encoded."""
    found: set[str] = set()
    _, userinfo, rest = _split_userinfo(url)
    if userinfo:
        found.add(userinfo)
        found.add(userinfo.partition(":")[2])
    query = rest.partition("?")[2]
    query, _, fragment = query.partition("#")
    found.update(v for _, v in parse_qsl(query, keep_blank_values=True))
    found.update(part.partition("=")[2] for part in query.split("&"))
    found.add(fragment)
    if auth:
        found.add(auth)
        found.add(auth.partition(":")[2])
    variants: set[str] = set()
    for s in found:
        variants.update((s, unquote(s), quote(s, safe=""), quote(s, safe="@:")))
    return sorted((s for s in variants if s), key=len, reverse=True)


class Redactor:
    """Cuts the raw URL and its secrets out of a message (e.g. an exception's text) before it is shown.

    Args:
        url: the URL as given (credentials included).
        auth: ``user:password`` of ``$PYTEST_TRT_REMOTE_CACHE_AUTH``, if any.
    """

    def __init__(self, url: str, auth: str | None = None) -> None:
        self.url = url
        self.shown = display_url(url)
        secrets = url_secrets(url, auth)
        #: whole forms of the URL and how each is shown, longest first: the raw URL, without its
        #: fragment, without its query, without a trailing slash (the libraries quote any of them)
        forms = {url, url.split("#", 1)[0], url.split("?", 1)[0].split("#", 1)[0]}
        forms |= {f.rstrip("/") for f in forms}
        self._urls = sorted(((f, display_url(f)) for f in forms if f), key=lambda p: len(p[0]), reverse=True)
        self._free = [s for s in secrets if len(s) >= _MIN_FREE_SECRET]
        self._bound = [s for s in secrets if len(s) < _MIN_FREE_SECRET]

    def __call__(self, text: str) -> str:
        """``text`` with the URL replaced by its display form and every secret by ``***``."""
        for raw, shown in self._urls:
            text = text.replace(raw, shown)
        for s in self._free:
            text = text.replace(s, MASK)
        for s in self._bound:  # short secrets: only as userinfo or a query value
            text = re.sub(rf"(?<=[:=]){re.escape(s)}(?=[@&#\s'\"]|$)", MASK, text)
        return text


def check_url(url: str, source: str) -> None:
    """Raise :class:`~pytest_trt.errors.UsageError` naming ``source`` (``--trt-remote-cache``,
    ``$PYTEST_TRT_REMOTE_CACHE`` ...) when ``url`` cannot be a remote cache URL: control
    characters or spaces, an authority that does not parse (``http://[::1``, a port out of
    range), an http(s) URL without a host, or a password holding ``/``, ``?`` or ``#``."""
    shown = display_url(url)
    if _CONTROL.search(url):
        raise UsageError(f"{source} {shown}: the URL contains a control character (a newline?); "
                         f"give the URL alone")
    prefix, userinfo, rest = _split_userinfo(url)
    if userinfo and any(c in userinfo for c in "/?#"):
        raise UsageError(f"{source} {shown}: the credentials before '@' contain '/', '?' or '#', which end the "
                         f"host part of a URL; percent-encode them in the password (%2F, %3F, %23), or give "
                         f"user:password in $PYTEST_TRT_REMOTE_CACHE_AUTH (WebDAV)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (parses the port: out of range or not a number raises ValueError)
    except ValueError as exc:
        raise UsageError(f"{source} {shown}: not a valid URL ({exc}); expected e.g. https://host/path, "
                         f"file:///shared/dir or s3://bucket/prefix") from None
    scheme = parts.scheme.lower()
    if scheme in ("http", "https", "webdav+http", "webdav+https") and not parts.hostname:
        raise UsageError(f"{source} {shown}: the URL names no host; expected e.g. https://host/path")

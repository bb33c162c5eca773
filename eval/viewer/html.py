"""A small HTML builder: every text is escaped unless it is already `Markup`.

    el("td", {"class": "ok", "data-value": 0.75}, "75.0")     # -> Markup('<td class="ok" ...>75.0</td>')
    page("Run overview", body, depth=0)                       # a whole document linking assets/

No template engine: pages are built from functions in `eval/viewer/pages.py`, so the only
things that reach the browser are escaped text, our own markup, Graphviz's SVG and the
vendored `assets/` (no network at view time).
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

__all__ = ["Markup", "el", "join", "page", "text"]

VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "col"})


class Markup(str):
    """Text that is already HTML; concatenation with `join` keeps it unescaped."""

    __slots__ = ()


Child = Markup | str | int | float | None | Iterable["Child"]


def text(value: Any) -> Markup:
    return value if isinstance(value, Markup) else Markup(escape(str(value), quote=False))


def _render(child: Child, out: list[str]) -> None:
    if child is None:
        return
    if isinstance(child, str):
        out.append(child if type(child) is Markup else escape(child, quote=False))
    elif isinstance(child, int | float):
        out.append(str(child))
    else:
        for item in child:
            _render(item, out)


def join(*children: Child) -> Markup:
    out: list[str] = []
    _render(children, out)
    return Markup("".join(out))


def _attr_text(attrs: dict[str, Any] | None) -> str:
    if not attrs:
        return ""
    parts = []
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        if value is True:
            parts.append(f" {key}")
        else:
            parts.append(f' {key}="{escape(str(value), quote=True)}"')
    return "".join(parts)


def el(tag: str, attrs: dict[str, Any] | None = None, *children: Child) -> Markup:
    """One element; `attrs` values of None/False are left out, True gives a bare attribute."""
    out = [f"<{tag}{_attr_text(attrs)}>"]
    if tag in VOID:
        return Markup(out[0])
    for child in children:  # a few thousand elements per page: no intermediate strings per level
        _render(child, out)
    out.append(f"</{tag}>")
    return Markup("".join(out))


def page(title: str, body: Child, *, depth: int = 0, body_class: str = "") -> str:
    """A complete document; `depth` is how many folders below the viewer root the page lives."""
    up = "../" * depth
    return (
        join(
            Markup("<!DOCTYPE html>\n"),
            el(
                "html",
                {"lang": "en"},
                el(
                    "head",
                    None,
                    el("meta", {"charset": "utf-8"}),
                    el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
                    el("title", None, title),
                    el("link", {"rel": "stylesheet", "href": f"{up}assets/viewer.css"}),
                    el("script", {"src": f"{up}assets/viewer.js", "defer": True}),
                ),
                el("body", {"class": body_class or None}, body),
            ),
        )
        + "\n"
    )

"""A griffe extension that turns the docstrings' Sphinx roles into cross-references for the site.

The docstrings are written for Sphinx (``:class:`~dice_poker_env.rules.Rules```, ``:func:`solve```) and the
site renders them as Markdown through mkdocstrings, which would show the roles as raw text. Loaded by
mkdocstrings-python (``extensions:`` in ``mkdocs.yml``), this extension rewrites each role, once the package
is loaded and before any docstring is parsed, into an optional cross-reference of mkdocs-autorefs::

    :class:`~dice_poker_env.rules.Rules`   ->  <autoref identifier="dice_poker_env.rules.Rules" optional>`Rules`</autoref>

The target is resolved the way Sphinx does: ``~`` shows the last name only, ``Title <target>`` shows the title,
a leading ``.`` or a plain name is looked up in the object's own scope (its class, its module and what the module
imports) with :meth:`griffe.Object.resolve`. autorefs links the reference when some page documents the target and
otherwise renders the text as plain code without a warning (``optional``), so ``mkdocs build --strict`` never fails
on a role whose target is not in the API reference (an external class, a private helper). The docstrings
themselves are not changed; only the copy griffe hands to the site.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLES = ("class", "func", "meth", "mod", "data", "attr", "exc", "obj", "const", "type")
"""The Python-domain roles rewritten (with or without a ``py:`` domain prefix)."""

ROLE_RE = re.compile(r":(?:py:)?(?P<role>" + "|".join(ROLES) + r"):`(?P<body>[^`]+)`")
"""A Sphinx role: ``:class:`...```, ``:py:func:`...```."""

TITLE_RE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)


def _resolve(obj: griffe.Object, target: str) -> str:
    """The full dotted path of a role's ``target`` seen from ``obj`` (the target itself when it does not resolve).

    Args:
        obj: The object whose docstring holds the role.
        target: The role's target without ``~``/``!`` (``Rules``, ``.turn``, ``dice_poker_env.solver.solve``).

    Returns:
        A dotted path for autorefs.
    """
    name = target.lstrip(".")
    first, _, rest = name.partition(".")
    scopes: list[griffe.Object] = []
    scope: griffe.Object | None = obj
    while scope is not None:
        scopes.append(scope)
        scope = scope.parent
    for scope in scopes:
        try:
            base = scope.resolve(first)
        except (griffe.NameResolutionError, AttributeError, KeyError):
            continue
        return f"{base}.{rest}" if rest else base
    return name


def rewrite(text: str, obj: griffe.Object) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs cross-reference.

    Args:
        text: A docstring.
        obj: The object the docstring belongs to (its scope resolves relative names).

    Returns:
        The docstring for Markdown.
    """

    def replace(match: re.Match[str]) -> str:
        body = " ".join(match["body"].split())
        titled = TITLE_RE.match(body)
        if titled:
            title, target = titled["title"], titled["target"].strip()
        else:
            title, target = None, body
        target = target.lstrip("!")
        short = target.startswith("~")
        target = target.lstrip("~")
        if title is None:
            title = target.lstrip(".").rsplit(".", 1)[-1] if short else target.lstrip(".")
        if not re.fullmatch(r"[A-Za-z_][\w.]*", target.lstrip(".")):
            return f"`{title}`"  # not a Python name: plain code
        identifier = _resolve(obj, target)
        return f'<autoref identifier="{html.escape(identifier)}" optional>`{title}`</autoref>'

    return ROLE_RE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring in a loaded package (see the module's docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the docstrings of ``pkg`` and of everything it defines (imported names are left to their owners).

        Args:
            pkg: The package griffe has just loaded.
            **kwargs: The other arguments of the hook.
        """
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj.docstring.value, obj)
            stack.extend(member for member in obj.members.values() if not isinstance(member, griffe.Alias))

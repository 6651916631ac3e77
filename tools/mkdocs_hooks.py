"""MkDocs hooks of the documentation site (``hooks:`` in ``mkdocs.yml``): the site loads nothing from outside.

The Material theme's web fonts are off (``theme.font: false`` in ``mkdocs.yml``: the system fonts are used).
mkdocs-jupyter's notebook template adds to every tutorial page a script that imports Mermaid from a CDN when the
page holds a Mermaid diagram; the tutorials hold none, and this hook removes that script, so a tutorial page
read offline (or behind a firewall) makes no request outside the site. ``tests/test_docs.py`` scans the built site
for any load from outside it.

The tutorials' links to the other pages are written for the notebook where it is stored (``../grading.md#...``,
``02_custom_ruleset.ipynb``: what Jupyter and GitHub follow), and mkdocs-jupyter leaves them as they are, where the
site has ``../../grading/#...``: this hook points them at the pages' URLs, and a link to a page or an anchor that
is not there is a warning (an error with ``--strict``), as it is on the Markdown pages.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.tutorial_links")

NOTEBOOK_PAGE_LINK = re.compile(r'href="([^":#?]+\.(?:md|ipynb))(#[^"]*)?"')
"""A link from a notebook to a page of the site by its source file (no scheme), with its anchor if any."""

_anchors_to_check: list[tuple[str, str, str]] = []  # (the notebook, the page's built file, the anchor)


def on_pre_build(**kwargs: Any) -> None:
    """Forget the anchors of an earlier build (``mkdocs serve`` builds again in the same process)."""
    _anchors_to_check.clear()


def on_page_content(html: str, page: Any, files: Any, **kwargs: Any) -> str:
    """Point a tutorial notebook's links to other pages (their source files) at those pages' URLs.

    Args:
        html: The page's content, as HTML.
        page: The page (only a notebook's is changed).
        files: The site's files.
        **kwargs: The hook's other arguments.

    Returns:
        The content with the links that the site can follow.
    """
    source = page.file.src_uri
    if not source.endswith(".ipynb"):
        return html

    def link(match: re.Match[str]) -> str:
        path, anchor = match.group(1), match.group(2) or ""
        target = files.get_file_from_path(posixpath.normpath(posixpath.join(posixpath.dirname(source), path)))
        if target is None:
            log.warning(f"Doc file '{source}' contains a link '{path}{anchor}', but the target is not found")
            return match.group(0)
        if len(anchor) > 1:
            _anchors_to_check.append((source, target.abs_dest_path, anchor[1:]))
        return f'href="{target.url_relative_to(page.file)}{anchor}"'

    return NOTEBOOK_PAGE_LINK.sub(link, html)


def on_post_build(**kwargs: Any) -> None:
    """Warn about a tutorial's link to an anchor that its page does not have."""
    for source, built, anchor in _anchors_to_check:
        text = Path(built).read_text(encoding="utf-8") if Path(built).is_file() else ""
        if f'id="{anchor}"' not in text:
            log.warning(f"Doc file '{source}' contains a link to '#{anchor}' of {built}, which has no such anchor")


EXTERNAL_MODULE_SCRIPT = re.compile(
    r"<script type=\"module\">(?:(?!</script>).)*?import\(\s*\"https?://(?:(?!</script>).)*</script>", re.DOTALL
)
"""A module script that imports code from another site (mkdocs-jupyter's Mermaid loader)."""


def on_post_page(output: str, **kwargs: Any) -> str:
    """Remove the scripts that would import code from outside the site.

    Args:
        output: A built page's HTML.
        **kwargs: The hook's other arguments.

    Returns:
        The page without them.
    """
    return EXTERNAL_MODULE_SCRIPT.sub("", output)

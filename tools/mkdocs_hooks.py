"""MkDocs hooks of the documentation site (``hooks:`` in ``mkdocs.yml``): the site loads nothing from outside.

The Material theme's web fonts are off (``theme.font: false`` in ``mkdocs.yml``: the system fonts are used).
mkdocs-jupyter's notebook template adds to every tutorial page a script that imports Mermaid from a CDN when the
page holds a Mermaid diagram; the tutorials hold none, and this hook removes that script, so a tutorial page
read offline (or behind a firewall) makes no request outside the site. ``tests/test_docs.py`` scans the built site
for any load from outside it.
"""

from __future__ import annotations

import re
from typing import Any

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

"""Text that ships with every CPython: the help topics of ``pydoc_data.topics`` (the Language Reference sections that
``help('assignment')`` prints, about 128 000 word pieces). No downloads.

* :func:`sections`: each titled section, split into its first paragraph and the rest.
* :func:`retrieval_pairs`: the lab's retrieval set, query = a section's first paragraph, document = the rest of the
  section (only sections whose rest is long, so that the documents exercise long-range attention).
* :func:`long_text`: all topics concatenated, for windows of up to 512 positions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^(.+)\n([*=\-^~])\2{2,}\s*$", re.M)


@dataclass(frozen=True)
class Section:
    topic: str
    title: str
    first_paragraph: str
    rest: str


def _topics() -> dict[str, str]:
    from pydoc_data.topics import topics

    return topics


def sections() -> list[Section]:
    """Every section (a heading underlined by ``*``, ``=``, ``-``, ``^`` or ``~``) with at least two paragraphs, in
    the sorted order of the topics."""
    found = []
    topics = _topics()
    for topic in sorted(topics):
        text = topics[topic]
        headings = list(_HEADING.finditer(text))
        for i, heading in enumerate(headings):
            end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
            paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text[heading.end() : end]) if p.strip()]
            if len(paragraphs) >= 2:
                found.append(Section(topic, heading.group(1).strip(), paragraphs[0], "\n\n".join(paragraphs[1:])))
    return found


def retrieval_pairs(count_tokens, min_document_tokens: int = 256) -> list[Section]:
    """Sections whose rest has at least ``min_document_tokens`` word pieces (``count_tokens(text) -> int``)."""
    return [s for s in sections() if count_tokens(s.rest) >= min_document_tokens]


def long_text() -> str:
    """Every topic, in sorted order, separated by blank lines."""
    topics = _topics()
    return "\n\n".join(topics[t] for t in sorted(topics))

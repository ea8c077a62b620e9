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
    """One titled section of a help topic, split into its first paragraph and the rest.

    Parameters
    ----------
    topic : str
        The key of ``pydoc_data.topics.topics`` it comes from.
    title : str
        The heading's text.
    first_paragraph : str
        The first paragraph under the heading (the retrieval query).
    rest : str
        The other paragraphs, joined by blank lines (the retrieval document).

    Examples
    --------
    >>> from gpu.approx.corpus import Section
    >>> Section("assert", "The assert statement", "Assert statements ...", "The simple form ...").title
    'The assert statement'
    """

    topic: str
    title: str
    first_paragraph: str
    rest: str


def _topics() -> dict[str, str]:
    from pydoc_data.topics import topics

    return topics


def sections() -> list[Section]:
    """Every titled section of the help topics with at least two paragraphs, in the sorted order of the topics.

    A heading is a line underlined by three or more of ``*``, ``=``, ``-``, ``^`` or ``~`` (reStructuredText's
    section adornment [1]_); paragraphs are separated by blank lines.

    Returns
    -------
    list of Section
        The sections, topic by topic.

    Examples
    --------
    >>> from gpu.approx.corpus import sections
    >>> found = sections()
    >>> all(s.first_paragraph and s.rest for s in found)
    True
    >>> found[0].topic == min(s.topic for s in found)
    True

    References
    ----------
    .. [1] Docutils, "reStructuredText Markup Specification", section "Sections"
       (https://docutils.sourceforge.io/docs/ref/rst/restructuredtext.html#sections).
    """
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
    """Sections whose rest has at least ``min_document_tokens`` word pieces: the lab's retrieval set.

    Query = a section's first paragraph, document = its rest.

    Parameters
    ----------
    count_tokens : callable
        ``count_tokens(text) -> int``, the number of word pieces of a text (the model's tokenizer).
    min_document_tokens : int, optional
        Shortest document kept, in word pieces.

    Returns
    -------
    list of Section
        The kept sections, in the order of :func:`sections`.

    Examples
    --------
    >>> from gpu.approx.corpus import retrieval_pairs, sections
    >>> words = lambda text: len(text.split())
    >>> pairs = retrieval_pairs(words, 200)
    >>> 0 < len(pairs) < len(sections()) and all(words(s.rest) >= 200 for s in pairs)
    True
    """
    return [s for s in sections() if count_tokens(s.rest) >= min_document_tokens]


def long_text() -> str:
    """Every help topic, in sorted order, separated by blank lines.

    Returns
    -------
    str
        The concatenated topics.

    Examples
    --------
    >>> from gpu.approx.corpus import long_text
    >>> text = long_text()
    >>> len(text) > 100_000
    True
    """
    topics = _topics()
    return "\n\n".join(topics[t] for t in sorted(topics))

"""bisect.json and bisect.html of `python -m reports bisect`: pure builders. The page is drawn
from the document alone, in the release scan's style."""

from __future__ import annotations

from html import escape

from fixtures.known_bugs.registry import Bug
from reports.bisect.answers import Terms
from reports.pages.html import link, standalone_page

BISECT_SCHEMA_VERSION = 1


def outcome_line(answer_key: str, first: dict | None, candidates: list[dict], problem: str | None) -> str:
    if first:
        return f"{answer_key.replace('_', ' ')} commit {first['commit'][:12]}"
    if candidates:
        return f"only skipped commits left: the {answer_key.replace('_', ' ')} commit is one of {len(candidates)}"
    return f"no answer: {problem}"


def bisect_document(
    *, package: str, repo: str, bug: Bug, fixed: bool, names: Terms, good: str, bad: str, first: dict | None,
    candidates: list[dict], problem: str | None, steps: list[dict], wall_s: float, exit_status: int,
) -> dict:
    """first: the answer (commit, subject, date, pull_request) under `first_bad`, or `first_fixed`
    with --fixed; candidates: git's range when only skipped commits were left."""
    answer_key = "first_fixed" if fixed else "first_bad"
    return {
        "bisect_schema_version": BISECT_SCHEMA_VERSION,
        "package": package,
        "repo": repo,
        "bug_id": bug.id,
        "title": bug.title,
        "issue": bug.issue,
        "fixed": fixed,
        "terms": {"old": names.old, "new": names.new},
        "good": good,
        "bad": bad,
        "answer_key": answer_key,
        answer_key: first,
        "candidates": candidates,
        "problem": problem,
        "outcome": outcome_line(answer_key, first, candidates, problem),
        "exit_status": exit_status,
        "wall_s": wall_s,
        "steps": steps,
    }


# bug_present -> (the verdict colour it borrows, its words)
SEEN = {True: ("reproduced", "observed"), False: ("fixed", "not observed"), None: ("skipped", "cannot tell")}


def _step_row(step: dict, answer: str | None) -> str:
    mark = ' class="bisect-answer"' if step["commit"] == answer else ""
    colour, words = SEEN[step["bug_present"]]
    badge = f'<span class="verdict verdict-{colour}">{words}</span>'
    if step["report"]:
        badge = f'<a href="{escape(step["report"])}/report.html">{badge}</a>'
    install = "cached" if step["cached"] else f"{step['install_s']:.1f} s"
    return (
        f'<tr{mark} data-seen="{words}"><td><code>{escape(step["commit"][:12])}</code></td><td>{escape(step["date"][:10])}</td>'
        f'<td>{escape(step["subject"])}</td><td>{badge}</td><td>{escape(step["evidence"] or "-")}</td><td>{escape(step["term"])}</td>'
        f'<td>{escape(step["reason"])}</td><td>{install}</td><td>{step["pytest_s"]:.1f} s</td></tr>'
    )


def _answer(document: dict) -> str:
    key = document["answer_key"]
    found = document[key]
    if found:
        pr = f" ({link(found['pull_request'], 'pull request')})" if found["pull_request"] else ""
        return (
            f'<p class="bisect-found"><span class="verdict verdict-fixed">{escape(key.replace("_", " "))}</span> '
            f'<code>{escape(found["commit"])}</code> {escape(found["subject"])}, {escape(found["date"])}{pr}</p>'
        )
    if document["candidates"]:
        items = "".join(f'<li><code>{escape(c["commit"])}</code> {escape(c["subject"])}</li>' for c in document["candidates"])
        return (
            '<p><span class="verdict verdict-skipped">only skipped commits left</span> git could not test the commits between; '
            f"the {escape(key.replace('_', ' '))} commit is one of:</p><ul>{items}</ul>"
        )
    return f'<p><span class="verdict verdict-regressed">no answer</span> {escape(document["problem"] or "")}</p>'


def bisect_html(document: dict) -> str:
    answer = (document[document["answer_key"]] or {}).get("commit")
    terms = document["terms"]
    legend = (
        f'<p class="muted">{escape(document["bug_id"])}: {escape(document["title"])} ({link(document["issue"], "issue")}). '
        f'Repository <code>{escape(document["repo"])}</code>; git terms: old <code>{escape(terms["old"])}</code>, '
        f'new <code>{escape(terms["new"])}</code>; {len(document["steps"])} steps (the two ends first) in {document["wall_s"]:.0f} s. '
        "Each observation links to that commit's report.</p>"
    )
    rows = "".join(_step_row(step, answer) for step in document["steps"])
    table = (
        '<table class="harness-table bisect-steps"><tr><th>commit</th><th>date</th><th>subject</th><th>bug</th><th>evidence</th>'
        f"<th>git term</th><th>why</th><th>install</th><th>pytest</th></tr>{rows}</table>"
    )
    return standalone_page(f"Bisect: {document['bug_id']} in {document['package']}", _answer(document) + legend + table)

"""The documentation stands alone: every relative link of the repository's Markdown files names
a file or folder inside the repository that exists (with its #anchor, a heading of that file),
and no file of the repository points at the product's internal specification outside it."""

import os
import re
import sys

root = os.path.realpath(sys.argv[1])
skip = {".git", "__pycache__", ".venv", ".venv-torch", ".deps"}
outside = ("../" + "shared", "SPEC" + ".md")
problems = []
markdown = []


def anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    found = set()
    for line in open(path, encoding="utf-8"):
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


for folder, dirs, files in os.walk(root):
    dirs[:] = [d for d in dirs if d not in skip and not d.startswith("build")]
    for name in files:
        path = os.path.join(folder, name)
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        relative = os.path.relpath(path, root)
        for needle in outside:
            if needle in text:
                problems.append(f"{relative}: mentions {needle}")
        if name.endswith(".md"):
            markdown.append(relative)
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"[a-z]+:", target):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition("#")
                linked = os.path.realpath(os.path.join(folder, file_part)) if file_part else path
                if not linked.startswith(root + os.sep) and linked != root:
                    problems.append(f"{relative}: links outside the repository: {target}")
                elif not os.path.exists(linked):
                    problems.append(f"{relative}: links a missing file: {target}")
                elif anchor and linked.endswith(".md") and anchor not in anchors(linked):
                    problems.append(f"{relative}: links a missing heading: {target}")

print(f"{len(markdown)} Markdown files checked")
for problem in problems:
    print(problem)
print("self-contained" if not problems else f"{len(problems)} problems")

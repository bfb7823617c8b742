#!/usr/bin/env python3
"""A terminal screen captured with colours (`tmux capture-pane -e -p`) as an HTML page: the
same characters in a monospace font, each cell's SGR colours and attributes (bold,
reverse, the 16 basic colours, 256-colour and RGB ones), for a headless browser to take a
picture of. Usage: ansi-to-html.py TITLE < screen.ansi > screen.html
"""
import html
import re
import sys

# The xterm palette for the 16 basic colours.
BASIC = [
    "#1d1f21", "#cc342b", "#2da44e", "#c29a00", "#3971ed", "#a36ac7", "#2a9d9d", "#c5c8c6",
    "#6e7781", "#ff5f56", "#5fd068", "#f0c674", "#6f9cff", "#d291e4", "#56d4d4", "#ffffff",
]
FG, BG = "#d0d3d4", "#16181a"


def colour_256(n):
    if n < 16:
        return BASIC[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


def apply(codes, st):
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            st.update(fg=None, bg=None, bold=False, reverse=False, dim=False, underline=False)
        elif c == 1:
            st["bold"] = True
        elif c == 2:
            st["dim"] = True
        elif c == 4:
            st["underline"] = True
        elif c == 7:
            st["reverse"] = True
        elif c == 22:
            st["bold"] = st["dim"] = False
        elif c == 24:
            st["underline"] = False
        elif c == 27:
            st["reverse"] = False
        elif 30 <= c <= 37:
            st["fg"] = BASIC[c - 30]
        elif 90 <= c <= 97:
            st["fg"] = BASIC[c - 90 + 8]
        elif 40 <= c <= 47:
            st["bg"] = BASIC[c - 40]
        elif 100 <= c <= 107:
            st["bg"] = BASIC[c - 100 + 8]
        elif c == 39:
            st["fg"] = None
        elif c == 49:
            st["bg"] = None
        elif c in (38, 48) and i + 1 < len(codes):
            key = "fg" if c == 38 else "bg"
            if codes[i + 1] == 5 and i + 2 < len(codes):
                st[key] = colour_256(codes[i + 2])
                i += 2
            elif codes[i + 1] == 2 and i + 4 < len(codes):
                st[key] = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5])
                i += 4
        i += 1


def style(st):
    fg, bg = st["fg"] or FG, st["bg"] or BG
    if st["reverse"]:
        fg, bg = bg, fg
    css = [f"color:{fg}"]
    if bg != BG:
        css.append(f"background:{bg}")
    if st["bold"]:
        css.append("font-weight:bold")
    if st["dim"]:
        css.append("opacity:.6")
    if st["underline"]:
        css.append("text-decoration:underline")
    return ";".join(css)


def main():
    title = sys.argv[1] if len(sys.argv) > 1 else "terminal"
    text = sys.stdin.read()
    st = dict(fg=None, bg=None, bold=False, reverse=False, dim=False, underline=False)
    out = []
    for line in text.rstrip("\n").split("\n"):
        parts = re.split(r"\x1b\[([0-9;]*)m", line)
        row = []
        for i, part in enumerate(parts):
            if i % 2 == 1:
                apply([int(c) if c else 0 for c in part.split(";")], st)
            elif part:
                row.append(f'<span style="{style(st)}">{html.escape(part)}</span>')
        out.append("".join(row))
    print(f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{margin:0;background:#0b0c0d}}
.term{{display:inline-block;margin:24px;padding:14px 18px;background:{BG};border-radius:8px;
box-shadow:0 4px 24px #000a}}
.bar{{font:13px system-ui,sans-serif;color:#9aa0a6;margin:-4px 0 10px}}
pre{{margin:0;font:14px/1.3 'DejaVu Sans Mono',monospace;color:{FG}}}</style></head>
<body><div class="term"><div class="bar">{html.escape(title)}</div><pre>{chr(10).join(out)}</pre></div></body></html>""")


if __name__ == "__main__":
    main()

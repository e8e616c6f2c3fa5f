"""A screenshot of `othello-jax serve`'s page in a real position, for the README.

Starts the server in this process (``--agent``: the engine, white), opens the page in headless
Chromium (Playwright, Debian's ``chromium``), and plays black by the page's own hints: each move
asks for a hint and clicks the square the search likes best, and the engine answers. After
``--moves`` moves it asks for one more hint and photographs the page: the board with the
search's shares and winning chances on the squares, the network's value, the evaluation graph
and the move list.

    python -m experiments.screenshot_serve                       # docs/figures/serve.png
    python -m experiments.screenshot_serve --moves=8 --seconds=0.5 --out=/tmp/serve.png
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from othello_jax.commands import serve

WAIT_MS = 600_000  # the first search compiles (half a minute to minutes on a small CPU)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", default="builtin:8x8-expert", help="the engine (white); a network, for hints")
    parser.add_argument("--moves", type=int, default=12, help="black's moves before the picture")
    parser.add_argument("--seconds", type=float, default=1.0, help="the search's seconds a move (hints too)")
    parser.add_argument("--out", default="docs/figures/serve.png")
    parser.add_argument("--chromium", default=shutil.which("chromium"), help="the browser (default: chromium on PATH)")
    args = parser.parse_args(argv)
    if not args.chromium:
        print("screenshot_serve: no chromium on PATH (apt-get install -y chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    options = serve.build_parser().parse_args([f"--agent={args.agent}", f"--seconds={args.seconds}"])
    table, _ = serve.build_table(options)
    size = table.lineup.sizes[args.agent][0]
    with serve.in_background(table) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1060, "height": 760}, device_scale_factor=1)
        page.set_default_timeout(WAIT_MS)
        page.goto(url)
        page.get_by_role("button", name="d4").wait_for()
        page.select_option("#size", str(size))
        page.select_option("#black", "you")
        page.select_option("#white", args.agent)
        page.click("#new-game")
        page.wait_for_function("document.body.dataset.busy === 'false'")
        for move in range(args.moves + 1):
            page.click("#hint")
            page.wait_for_function("document.querySelectorAll('#board button.best').length > 0 && "
                                   "document.body.dataset.busy === 'false'")
            if move == args.moves or page.evaluate("document.body.dataset.over") == "true":
                break
            played = page.locator("#moves li").count()
            page.locator("#board button.best").first.click()
            page.wait_for_function(f"document.querySelectorAll('#moves li').length > {played + 1} && "
                                   "document.body.dataset.busy === 'false' || document.body.dataset.over === 'true'")
            print(f"move {move + 1}: {page.locator('#transcript').input_value()}", flush=True)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=args.out, full_page=True)
        browser.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

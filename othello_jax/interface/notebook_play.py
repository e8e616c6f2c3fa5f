"""Playing an agent inside a notebook: moves by typing (``game.move("d3")``) or by clicking
(ipywidgets, when installed), an SVG board, and the agent's evaluation after each of its moves.

Typing needs nothing but IPython, so it works headless (tests, plain Jupyter); the clickable
board is an optional extra built by :meth:`NotebookGame.widget`.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import jax

from othello_jax.evaluation.analysis import Analyzer, PositionAnalysis, format_analysis, format_search_line
from othello_jax.game import NotationError, Othello, render, square_name
from othello_jax.game import bitboard as bb
from othello_jax.interface.board_svg import board_svg
from othello_jax.interface.session import GameSession, color_name


class NotebookGame:
    """A game between the notebook user (``human`` colour) and an agent.

    With the agent of ``analyzer`` (:meth:`Analyzer.agent`) the analysis behind each agent move
    (value estimate, top moves with visits) is kept and shown; ``hint()`` searches the user's
    position too. ``commentary(agent) -> text`` (a player's, see
    :mod:`othello_jax.commands.agent_options`) speaks for moves without an analysis behind them,
    e.g. those of the exact endgame solver.
    """

    def __init__(self, agent: Any, game: Othello = Othello(8), human: int = 0, seed: int = 0,
                 analyzer: Analyzer | None = None, commentary: Callable[[Any], str] | None = None):
        self.agent = agent
        self.analyzer = analyzer
        self.commentary = commentary
        self.agent_note = ""  # the commentary on the agent's last move
        self.session = GameSession(game)
        self.human = human
        self.message = ""
        self.agent_analysis: PositionAnalysis | None = None  # behind the agent's last move
        self.hint_analysis: PositionAnalysis | None = None
        self._key = jax.random.PRNGKey(seed)
        self._refresh = lambda: None  # redraws the widget after a click
        self.square_buttons: list = []  # the widget's buttons by action, once built
        self._agent_turns()

    # ---- moves --------------------------------------------------------------------------
    def move(self, text: str) -> NotebookGame:
        """Play the user's move (``'d3'``, ``'pass'``), then the agent's replies; returns self
        so a cell ending in ``game.move('d3')`` shows the board."""
        self.hint_analysis = None
        if self.session.is_over:
            self.message = "the game is over"
        elif self.session.to_move != self.human:
            self.message = "it is the agent's turn"
        else:
            try:
                self.session.play(self.session.parse_move(text))
                self.message = ""
                self._agent_turns()
            except NotationError as error:
                self.message = f"illegal: {error}"
        self._refresh()
        return self

    def suggested_move(self) -> str:
        """The move the agent would play in the user's position ('c2', 'pass'): the notebook plays
        it when no move is typed. '' once the game is over or while it is not the user's turn."""
        if self.session.is_over or self.session.to_move != self.human:
            return ""
        self._key, key = jax.random.split(self._key)
        action = self.session.agent_move(self.agent, key)
        return "pass" if action == self.session.game.pass_action else square_name(action, self.session.game.size)

    def undo(self) -> NotebookGame:
        """Take back the user's last move and the agent's replies."""
        self.message = "took back your last move" if self.session.undo_turn(self.human) else "nothing to undo"
        self.agent_analysis = self.hint_analysis = None
        self.agent_note = ""
        self._refresh()
        return self

    def hint(self) -> NotebookGame:
        """Search the user's position and label the squares with visit counts."""
        if self.analyzer is None:
            self.message = "no search available for hints"
        elif not self.session.is_over:
            self._key, key = jax.random.split(self._key)
            self.hint_analysis = self.analyzer.analyze(self.session.state, key)
        self._refresh()
        return self

    def _agent_turns(self) -> None:
        while not self.session.is_over and self.session.to_move != self.human:
            self._key, key = jax.random.split(self._key)
            if self.analyzer is not None:
                self.analyzer.last_move = None  # set again only if the agent is the analyzer's
            action = self.session.agent_move(self.agent, key)
            self.agent_analysis = self.analyzer.last_move if self.analyzer is not None else None
            self.agent_note = self.commentary(self.agent) if self.commentary is not None else ""
            self.session.play(action)
            if action == self.session.game.pass_action:
                said = "passes"
            else:
                said = f"plays {square_name(action, self.session.game.size)}"
            self.message = f"{color_name(1 - self.human)} ({self.agent.name}) {said}"

    # ---- display ------------------------------------------------------------------------
    def status(self) -> str:
        session = self.session
        black, white = session.disc_counts()
        if session.is_over:
            head = f"Game over: {session.result_text()}."
        elif session.must_pass():
            head = "You have no legal move: play move('pass')."
        else:
            head = f"Your move ({color_name(self.human)})."
        return f"{head} Black {black}, white {white}. Record: {session.transcript() or '-'}"

    def agent_report(self) -> str:
        """The agent's value estimate and top moves for its last move, else the commentary on it (text)."""
        if self.agent_analysis is None:
            return self.agent_note
        return "Agent's " + format_search_line(self.agent_analysis) + " (its own view)"

    def _repr_html_(self) -> str:
        labels = None
        if self.hint_analysis is not None:
            labels = {m.action: str(m.visits) for m in self.hint_analysis.moves
                      if m.action < self.session.game.num_squares}
        last = self.session.actions[-1] if self.session.actions else None
        svg = board_svg(self.session.state, self.session.game, last_move=last, labels=labels)
        lines = [self.message, self.status(), self.agent_report()]
        if self.hint_analysis is not None:
            lines.append("Hint for you:\n" + format_analysis(self.hint_analysis))
        text = "\n".join(html.escape(line) for line in lines if line)
        return f'<div style="display:flex;gap:16px;align-items:flex-start">{svg}<pre>{text}</pre></div>'

    def __repr__(self) -> str:
        lines = [render(self.session.state, self.session.game), self.message, self.status(), self.agent_report()]
        return "\n".join(line for line in lines if line)

    # ---- clickable board ----------------------------------------------------------------
    def widget(self):
        """A clickable board (ipywidgets): one button per square plus pass/undo/hint."""
        import ipywidgets as widgets

        size = self.session.game.size
        buttons = [widgets.Button(layout=widgets.Layout(width="36px", height="36px")) for _ in range(size * size)]
        for action, button in enumerate(buttons):
            button.on_click(lambda _, name=square_name(action, size): self.move(name))  # noqa: B008 -- binds this loop's square
        controls = [widgets.Button(description=label) for label in ("pass", "undo", "hint")]
        controls[0].on_click(lambda _: self.move("pass"))
        controls[1].on_click(lambda _: self.undo())
        controls[2].on_click(lambda _: self.hint())
        self.square_buttons = buttons
        board = widgets.GridBox(buttons, layout=widgets.Layout(grid_template_columns=f"repeat({size}, 38px)"))
        info = widgets.HTML()

        def refresh() -> None:
            grid = self.session.game.black_white(self.session.state)
            black, white = (bb.to_grid(x, size).reshape(-1) for x in grid)
            legal = set(self.session.legal_actions())
            for action, button in enumerate(buttons):
                button.description = "●" if black[action] or white[action] else "·" if action in legal else ""
                button.style.button_color = "#2e7d32"
                button.style.text_color = "#111" if black[action] else "#fff"
                button.disabled = bool(black[action] or white[action])
            info.value = self._repr_html_()

        self._refresh = refresh
        refresh()
        return widgets.VBox([widgets.HBox([board, widgets.VBox(controls)]), info])

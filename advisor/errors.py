"""The one error type for problems the user can fix.

The library raises it; only the CLI turns it into exit code 2 and one clear line.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix: a bad file, an unknown name, an impossible request."""

    def __init__(self, message: str, hint: str | None = None, suggestions: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.suggestions = list(suggestions or [])

    def line(self) -> str:
        """The single line shown to the user: what is wrong, then how to fix it."""
        text = self.message
        if self.suggestions:
            text += f" (did you mean: {', '.join(self.suggestions)}?)"
        if self.hint:
            text += f"; {self.hint}"
        return text

    def __str__(self) -> str:
        return self.line()

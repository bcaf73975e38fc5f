"""The exceptions of the package: every failure is an mhac.Error."""


class Error(Exception):
    """Base of mhac's exceptions."""


class CompileError(Error):
    """`mhac compile` refused the layers. `message` is its output: one located message per
    problem (`<stdin>:3:5: error: ...`), with the source line and a caret."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class RunError(Error):
    """A runtime call returned a status other than MHAC_OK; `status` is that code."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class WeightError(Error, ValueError):
    """The weights given to a layer do not fit it: a missing, unknown or misshaped tensor."""


# Tracebacks name them as the package exports them (mhac.Error, not mhac._errors.Error).
for _exception in (Error, CompileError, RunError, WeightError):
    _exception.__module__ = "mhac"

"""RankerUnavailable: why a GEMM goes to stock rather than to a ranker's decision."""


class RankerUnavailable(RuntimeError):
    """This ranker cannot score this device / dtype / problem; the message says why, `cause`
    names it for the one warning per cause."""

    def __init__(self, cause: str, message: str):
        super().__init__(message)
        self.cause = cause

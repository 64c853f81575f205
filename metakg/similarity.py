"""Cosine similarity between named texts (question, concepts, entities, triples).

Vectors arrive already L2-normalised (the embedder does that), so a cosine is a dot
product. The helper refuses vectors that are not unit length rather than silently
returning a wrong cosine.

>>> import numpy as np
>>> s = Similarity({"q": np.array([1.0, 0.0]), "aspirin": np.array([0.6, 0.8])})
>>> round(s.sim("q", "aspirin"), 6)
0.6
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.floating]


class Similarity:
    """Maps names to unit vectors; `sim(a, b)` is their cosine.

    A graph-backed neighbour source adds the vectors of the entities it returns with
    `add`, so the cycle can score every entity on a path.

    >>> import numpy as np
    >>> s = Similarity({"a": np.array([1.0, 0.0])})
    >>> s.add("b", np.array([0.0, 1.0]))
    >>> s.sim("a", "b"), "b" in s
    (0.0, True)
    """

    def __init__(self, vectors: Mapping[str, Vector] | None = None, *, atol: float = 1e-3
                 ) -> None:
        self._atol = atol
        self._vectors: dict[str, Vector] = {}
        self._dim: int | None = None
        for name, vector in (vectors or {}).items():
            self.add(name, vector)

    def add(self, name: str, vector: Vector) -> None:
        """Register (or replace) the unit vector of `name`."""
        v = np.asarray(vector, dtype=np.float64)
        if v.ndim != 1:
            raise ValueError(f"vector of {name!r} must be 1-D, got shape {v.shape}")
        if self._dim is not None and v.shape[0] != self._dim:
            raise ValueError(f"vector of {name!r} has {v.shape[0]} dims, expected {self._dim}")
        norm = float(np.linalg.norm(v))
        if abs(norm - 1.0) > self._atol:
            raise ValueError(f"vector of {name!r} is not L2-normalised (norm {norm:.4f})")
        self._dim = v.shape[0]
        self._vectors[name] = v

    def __contains__(self, name: object) -> bool:
        return name in self._vectors

    def names(self) -> list[str]:
        return list(self._vectors)

    def vector(self, name: str) -> Vector:
        try:
            return self._vectors[name]
        except KeyError:
            raise KeyError(f"no embedding for {name!r}; add it to the Similarity first") from None

    def sim(self, a: str, b: str) -> float:
        """Cosine of `a` and `b` (a dot product of unit vectors)."""
        return float(np.dot(self.vector(a), self.vector(b)))

    def max_sim(self, name: str, others: Iterable[str]) -> float:
        """max over `others` of sim(name, other); -1.0 (the least cosine) if there are none.

        >>> import numpy as np
        >>> Similarity({"a": np.array([1.0, 0.0])}).max_sim("a", [])
        -1.0
        """
        return max((self.sim(name, o) for o in others), default=-1.0)

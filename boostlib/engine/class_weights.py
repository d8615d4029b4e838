"""``class_weight`` of :class:`~boostlib.BoostClassifier`: checked, and turned into row
weights that multiply ``sample_weight`` (scikit-learn's and LightGBM's semantics)."""
from __future__ import annotations

import math
from numbers import Real
from typing import Any, Mapping, Optional

import numpy as np

from .._messages import listing, shown


def _plain_label(label: Any) -> Any:
    """A numpy scalar label as the Python value it equals (for dict lookups)."""
    return label.item() if isinstance(label, np.generic) else label


def check_class_weight(value: Any) -> None:
    """Check what does not depend on the data: None, ``"balanced"``, or a dict of finite
    positive weights.

    Raises
    ------
    TypeError, ValueError
        Naming ``class_weight``.
    """
    if value is None:
        return
    if isinstance(value, str):
        if value != "balanced":
            raise ValueError(f"class_weight={shown(value)} is invalid; expected None, 'balanced' "
                             "or a dict {class label: weight}")
        return
    if not isinstance(value, Mapping):
        raise TypeError(f"class_weight of type {type(value).__name__} is invalid; expected "
                        "None, 'balanced' or a dict {class label: weight}")
    for label, weight in value.items():
        ok = isinstance(weight, Real) and not isinstance(weight, (bool, np.bool_)) \
            and math.isfinite(float(weight)) and float(weight) > 0
        if not ok:
            raise ValueError(f"class_weight[{shown(label)}]={shown(weight)} is invalid; expected a "
                             "finite number > 0")


def class_row_weights(value: Any, classes: np.ndarray, y_index: np.ndarray
                      ) -> Optional[np.ndarray]:
    """The weight of every row from its class, or None for ``class_weight=None``.

    Parameters
    ----------
    value : None, "balanced" or dict
        ``class_weight``. ``"balanced"``: ``n_samples / (n_classes * count_k)`` for class
        ``k``, counted on this fit's ``y`` (scikit-learn's
        ``compute_sample_weight("balanced", y)``, ``n_classes`` the classes present in
        ``y``). A dict maps class labels (the original ones, as in ``classes_``) to weights;
        classes it leaves out weigh 1.
    classes : ndarray
        The classifier's labels, sorted (``classes_``).
    y_index : ndarray
        Every row's class as an index into ``classes`` (float or int).

    Raises
    ------
    ValueError
        For a dict naming labels that are not classes of ``y``.
    """
    check_class_weight(value)
    if value is None:
        return None
    index = np.asarray(y_index).astype(np.intp)
    n_classes = len(classes)
    if isinstance(value, str):                              # "balanced"
        counts = np.bincount(index, minlength=n_classes)
        present = counts > 0
        per_class = np.ones(n_classes)
        per_class[present] = index.size / (int(np.count_nonzero(present))
                                           * counts[present].astype(np.float64))
        return per_class[index]
    position = {_plain_label(c): k for k, c in enumerate(classes.tolist())}
    unknown = [label for label in value if _plain_label(label) not in position]
    if unknown:
        raise ValueError(f"class_weight names label(s) {listing(unknown, 5)} that are not "
                         f"classes of y; the classes are {listing(classes)}")
    per_class = np.ones(n_classes)
    for label, weight in value.items():
        per_class[position[_plain_label(label)]] = float(weight)
    return per_class[index]

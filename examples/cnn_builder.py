"""A small CNN built with ModelBuilder; prints the inferred shapes and the class probabilities."""

from __future__ import annotations

import numpy as np

import nnrt


def main() -> None:
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    x = b.input("image", (2, 28, 28, 1))
    y = b.conv2d(x, rng.standard_normal((8, 3, 3, 1)).astype(np.float32),
                 np.zeros(8, np.float32), stride=2, padding="same", activation="relu")
    print("conv2d      ->", y.shape)
    y = b.max_pool2d(y, 2)
    print("max_pool2d  ->", y.shape)
    y = b.reshape(y, (2, -1))
    print("reshape     ->", y.shape)
    y = b.fully_connected(y, rng.standard_normal((10, 392)).astype(np.float32) * 0.05,
                          np.zeros(10, np.float32))
    b.output(b.softmax(y), names=["probs"])
    model = b.build()
    (probs,) = nnrt.reference.run(model, {"image": rng.random((2, 28, 28, 1))})
    print("probabilities:", np.round(probs, 3))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""scikit-learn reference for dc-model (not run by CI).

  fixtures            write tests/fixtures/synthetic.csv and synthetic.expected.json
  expect DATA.csv     write DATA.expected.json next to a dataset exported by `dc-model dataset`
  bench DATA.csv      run the same models as `dc-model rank --layer all` and print one JSON line

A dataset CSV has one column per feature, then `y`, then `split` (train/test). Bench CSVs have
`layer::name` feature columns and `y`, and no split (the script makes its own 80/20 split).
Run with a venv that has scikit-learn, numpy and scipy, e.g. /opt/sklearn-venv/bin/python.
"""
import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy.stats
import sklearn
from sklearn.decomposition import PCA
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.inspection import permutation_importance
from sklearn.linear_model import Lasso, LassoCV
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
LASSO_ALPHA = 0.05


def read_dataset(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
    data = np.genfromtxt(path, delimiter=",", skip_header=1, dtype=str)
    feats = header[:-2]
    x = data[:, : len(feats)].astype(float)
    y = data[:, len(feats)].astype(float)
    test = data[:, len(feats) + 1] == "test"
    return feats, x, y, test


def expectations(feats, x, y, test):
    xy = np.column_stack([x, y])
    z = StandardScaler().fit_transform(x)
    pca = PCA(n_components=x.shape[1]).fit(z)
    lasso = Lasso(alpha=LASSO_ALPHA, tol=1e-12, max_iter=1_000_000).fit(z, y)
    gbm = GradientBoostingRegressor(n_estimators=200, max_depth=3, learning_rate=0.1, random_state=0)
    gbm.fit(x[~test], y[~test])
    return {
        "sklearn_version": sklearn.__version__,
        "features": feats,
        "pearson": np.corrcoef(xy, rowvar=False).tolist(),
        "spearman": scipy.stats.spearmanr(xy).statistic.tolist(),
        "pca_explained_variance_ratio": pca.explained_variance_ratio_.tolist(),
        "lasso_alpha": LASSO_ALPHA,
        "lasso_coef": lasso.coef_.tolist(),
        "lasso_intercept": float(lasso.intercept_),
        "gbm_test_r2": float(r2_score(y[test], gbm.predict(x[test]))),
    }


def write_dataset(path, feats, x, y, test):
    with open(path, "w") as f:
        f.write(",".join(feats + ["y", "split"]) + "\n")
        for row, target, t in zip(x, y, test):
            f.write(",".join(repr(float(v)) for v in row) + f",{float(target)!r},{'test' if t else 'train'}\n")


def synthetic():
    """Friedman #1: y depends on x0..x4 only; x5..x9 are noise."""
    rng = np.random.default_rng(7)
    n = 800
    x = rng.uniform(size=(n, 10))
    y = (10 * np.sin(np.pi * x[:, 0] * x[:, 1]) + 20 * (x[:, 2] - 0.5) ** 2 + 10 * x[:, 3] + 5 * x[:, 4]
         + rng.normal(scale=1.0, size=n))
    test = np.zeros(n, dtype=bool)
    test[rng.permutation(n)[: n // 5]] = True
    feats = [f"x{i}" for i in range(10)]
    FIXTURES.mkdir(parents=True, exist_ok=True)
    write_dataset(FIXTURES / "synthetic.csv", feats, x, y, test)
    exp = expectations(feats, x, y, test)
    exp["informative"] = feats[:5]
    (FIXTURES / "synthetic.expected.json").write_text(json.dumps(exp, indent=1) + "\n")


def expect(path):
    path = Path(path)
    exp = expectations(*read_dataset(path))
    path.with_suffix(".expected.json").write_text(json.dumps(exp, indent=1) + "\n")


def bench(path, folds=5, seed=0):
    """The models `dc-model rank --layer all` fits, per layer (scikit-learn has no TreeSHAP)."""
    with open(path) as f:
        header = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    y = data[:, -1]
    layers = {}
    for j, name in enumerate(header[:-1]):
        layers.setdefault(name.split("::")[0], []).append(j)
    start = time.perf_counter()
    out = {}
    for layer, cols in layers.items():
        x = data[:, cols]
        np.corrcoef(np.column_stack([x, y]), rowvar=False)
        scipy.stats.spearmanr(np.column_stack([x, y]))
        PCA(n_components=x.shape[1]).fit(StandardScaler().fit_transform(x))
        xt, xh, yt, yh = train_test_split(x, y, test_size=0.2, random_state=seed)
        lasso = make_pipeline(StandardScaler(), LassoCV(alphas=30, eps=1e-3, cv=folds)).fit(xt, yt)
        kf = KFold(folds, shuffle=True, random_state=seed)
        lasso_alpha = lasso[-1].alpha_
        cross_val_score(make_pipeline(StandardScaler(), Lasso(alpha=lasso_alpha)), x, y, cv=kf)
        gbm = GradientBoostingRegressor(n_estimators=200, max_depth=3, learning_rate=0.1,
                                        validation_fraction=0.1, n_iter_no_change=20, random_state=seed)
        gbm.fit(xt, yt)
        gbm_r2 = r2_score(yh, gbm.predict(xh))
        cv = cross_val_score(gbm, x, y, cv=kf)
        permutation_importance(gbm, xh, yh, n_repeats=5, random_state=seed)
        out[layer] = {"gbm_test_r2": gbm_r2, "gbm_cv_r2_mean": float(cv.mean()),
                      "lasso_test_r2": float(lasso.score(xh, yh)), "gbm_trees": int(gbm.n_estimators_)}
    print(json.dumps({"seconds": time.perf_counter() - start, "layers": out, "sklearn": sklearn.__version__}))


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "fixtures":
        synthetic()
    elif len(sys.argv) == 3 and sys.argv[1] == "expect":
        expect(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "bench":
        bench(sys.argv[2])
    else:
        sys.exit(__doc__)

#!/usr/bin/env python3
"""scikit-learn and LightGBM reference for dc-model (not run by CI).

  fixtures            write tests/fixtures/synthetic.csv and synthetic.expected.json
  expect DATA.csv     write DATA.expected.json next to a dataset exported by `dc-model dataset`
  quality DATA.csv    print LightGBM's and scikit-learn's held-out R² on an exported dataset's split
  forest DATA.csv     write DATA.forest.json: scikit-learn's RandomForestRegressor (dc-model forest) and
                      DecisionTreeClassifier of the slow calls (dc-model rules) on the dataset's split
  bench DATA.csv PLAN.json [--lightgbm-defaults]
                      run the LightGBM + scikit-learn pipeline doing what `dc-model rank --layer all`
                      does, on the rows and with the trees of the plan dc-model-bench writes; print one
                      JSON line

A dataset CSV has one column per feature, then `y`, `split` (train/test), `row`, `ts` and `group`.
Bench CSVs have `layer::name` feature columns and `y`.
Run with the venv scripts/setup.sh makes: /opt/datacrumbs-venv/bin/python.
"""
import itertools
import json
import sys
import time
from pathlib import Path

import lightgbm
import numpy as np
import scipy.stats
import sklearn
from sklearn.decomposition import PCA
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import Lasso, LassoCV
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
LASSO_ALPHA = 0.05


def read_dataset(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
    data = np.genfromtxt(path, delimiter=",", skip_header=1, dtype=str)
    p = header.index("y")
    feats = header[:p]
    x = data[:, :p].astype(float)
    y = data[:, p].astype(float)
    test = data[:, p + 1] == "test"
    ts = data[:, p + 3].astype(np.int64)
    group = data[:, p + 4]
    return feats, x, y, test, ts, group


def time_order(ts, group):
    """Positions ordered by group name, then ts, then position: dc-model's time order."""
    return sorted(range(len(ts)), key=lambda r: (group[r].encode(), ts[r], r))


def lgbm(n_estimators=200):
    return lightgbm.LGBMRegressor(n_estimators=n_estimators, learning_rate=0.1, random_state=0, verbose=-1)


def time_folds(ts, group, folds):
    """dc-model's time folds: fold f holds out the f-th contiguous stretch of each group's calls in time
    order (np.array_split: the first n % k stretches hold one more, as unshuffled KFold)."""
    order = time_order(ts, group)
    blocks = [[] for _ in range(folds)]
    for _, rows in itertools.groupby(order, key=lambda r: group[r]):
        for f, held in enumerate(np.array_split(list(rows), folds)):
            blocks[f].extend(held.tolist())
    every = set(range(len(ts)))
    return [(np.array(sorted(every - set(b))), np.array(sorted(b))) for b in blocks]


def lasso_cv(x, y, test, ts, group, folds=5):
    """LassoCV on the training rows standardized once, on dc-model's time folds."""
    train = np.flatnonzero(~test)
    cv = time_folds(ts[train], group[train], folds)
    z = StandardScaler().fit_transform(x[train])
    m = LassoCV(alphas=30, eps=1e-3, cv=cv, tol=1e-10, max_iter=1_000_000).fit(z, y[train])
    return {"alphas": m.alphas_.tolist(), "cv_mse": m.mse_path_.mean(axis=1).tolist(), "alpha": float(m.alpha_)}


def expectations(feats, x, y, test, ts, group):
    xy = np.column_stack([x, y])
    z = StandardScaler().fit_transform(x)
    pca = PCA(n_components=x.shape[1]).fit(z)
    lasso = Lasso(alpha=LASSO_ALPHA, tol=1e-12, max_iter=1_000_000).fit(z, y)
    gbm = GradientBoostingRegressor(n_estimators=200, max_depth=3, learning_rate=0.1, random_state=0)
    gbm.fit(x[~test], y[~test])
    lgb = lgbm().fit(x[~test], y[~test])
    return {
        "sklearn_version": sklearn.__version__,
        "lightgbm_version": lightgbm.__version__,
        "features": feats,
        "pearson": np.corrcoef(xy, rowvar=False).tolist(),
        "spearman": scipy.stats.spearmanr(xy).statistic.tolist(),
        "pca_explained_variance_ratio": pca.explained_variance_ratio_.tolist(),
        "lasso_alpha": LASSO_ALPHA,
        "lasso_coef": lasso.coef_.tolist(),
        "lasso_intercept": float(lasso.intercept_),
        "lasso_cv": lasso_cv(x, y, test, ts, group),
        "gbm_test_r2": float(r2_score(y[test], gbm.predict(x[test]))),
        "lightgbm_test_r2": float(r2_score(y[test], lgb.predict(x[test]))),
    }


def write_dataset(path, feats, x, y, test, ts, group):
    with open(path, "w") as f:
        f.write(",".join(feats + ["y", "split", "row", "ts", "group"]) + "\n")
        for i, (row, target, t) in enumerate(zip(x, y, test)):
            f.write(",".join(repr(float(v)) for v in row)
                    + f",{float(target)!r},{'test' if t else 'train'},{i},{ts[i]},{group[i]}\n")


def synthetic():
    """Friedman #1: y depends on x0..x4 only; x5..x9 are noise. Two runs interleaved, timestamps
    shuffled within each; the test rows are the latest 20% of each run."""
    rng = np.random.default_rng(7)
    n = 800
    x = rng.uniform(size=(n, 10))
    y = (10 * np.sin(np.pi * x[:, 0] * x[:, 1]) + 20 * (x[:, 2] - 0.5) ** 2 + 10 * x[:, 3] + 5 * x[:, 4]
         + rng.normal(scale=1.0, size=n))
    group = np.array(["run-a" if i % 2 == 0 else "run-b" for i in range(n)])
    ts = rng.permutation(n) * 1000
    test = np.zeros(n, dtype=bool)
    for g in ("run-a", "run-b"):
        rows = np.flatnonzero(group == g)
        latest = rows[np.argsort(ts[rows], kind="stable")][-len(rows) // 5:]
        test[latest] = True
    feats = [f"x{i}" for i in range(10)]
    FIXTURES.mkdir(parents=True, exist_ok=True)
    write_dataset(FIXTURES / "synthetic.csv", feats, x, y, test, ts, group)
    exp = expectations(feats, x, y, test, ts, group)
    exp["informative"] = feats[:5]
    (FIXTURES / "synthetic.expected.json").write_text(json.dumps(exp, indent=1) + "\n")


def expect(path):
    path = Path(path)
    exp = expectations(*read_dataset(path))
    path.with_suffix(".expected.json").write_text(json.dumps(exp, indent=1) + "\n")


def quality(path):
    feats, x, y, test, _, _ = read_dataset(path)
    gbm = GradientBoostingRegressor(n_estimators=200, max_depth=3, learning_rate=0.1, random_state=0)
    gbm.fit(x[~test], y[~test])
    lgb = lgbm().fit(x[~test], y[~test])
    print(json.dumps({"rows": len(y), "test_rows": int(test.sum()), "features": len(feats),
                      "lightgbm_test_r2": float(r2_score(y[test], lgb.predict(x[test]))),
                      "sklearn_gbm_test_r2": float(r2_score(y[test], gbm.predict(x[test])))}))


def slow_labels(feats, x, y, train):
    """dc-model rules' slow calls: per kind (op and size), the training targets' ceil(10%)-th lowest is the
    threshold, for kinds of at least ten training calls whose targets differ; None where a kind has none."""
    kind_cols = [j for j, f in enumerate(feats) if f in ("op", "size")]
    kinds = [tuple(row) for row in x[:, kind_cols]]
    by_kind = {}
    for r in np.flatnonzero(train):
        by_kind.setdefault(kinds[r], []).append(y[r])
    threshold = {}
    for k, ys in by_kind.items():
        ys = sorted(ys)
        if len(ys) >= 10 and ys[0] != ys[-1]:
            threshold[k] = ys[int(np.ceil(0.1 * len(ys))) - 1]
    return [None if kinds[r] not in threshold else bool(y[r] <= threshold[kinds[r]]) for r in range(len(y))]


def forest(path):
    path = Path(path)
    feats, x, y, test, _, _ = read_dataset(path)
    rows = np.genfromtxt(path, delimiter=",", skip_header=1, dtype=str)[:, len(feats) + 2].astype(int)
    train = ~test
    rf = RandomForestRegressor(n_estimators=100, random_state=0).fit(x[train], y[train])
    labels = slow_labels(feats, x, y, train)
    judged = np.array([s is not None for s in labels])
    slow = np.array([s is True for s in labels])
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(x[train & judged], slow[train & judged])
    held = test & judged
    predicted = tree.predict(x[held])
    truth = slow[held]
    hits = int((predicted & truth).sum())
    out = {
        "sklearn_version": sklearn.__version__,
        "features": feats,
        "forest_train_r2": float(r2_score(y[train], rf.predict(x[train]))),
        "forest_test_r2": float(r2_score(y[test], rf.predict(x[test]))),
        "forest_importances": rf.feature_importances_.tolist(),
        "slow_train_rows": sorted(int(r) for r in rows[train & slow]),
        "slow_test_rows": sorted(int(r) for r in rows[test & slow]),
        "unjudged_rows": sorted(int(r) for r in rows[~judged]),
        "tree_test_precision": hits / max(int(predicted.sum()), 1),
        "tree_test_recall": hits / max(int(truth.sum()), 1),
    }
    path.with_suffix(".forest.json").write_text(json.dumps(out, indent=1) + "\n")


def bench_gbm(gbm, own_defaults):
    """LightGBM given dc-model's trees (depth, leaves, learning rate, smallest leaf), or, with
    `own_defaults`, LightGBM's own (31 leaves, no depth limit) with only the tree count and rate set."""
    if own_defaults:
        return lgbm(gbm["n_estimators"])
    return lightgbm.LGBMRegressor(
        n_estimators=gbm["n_estimators"], max_depth=gbm["max_depth"], num_leaves=2 ** gbm["max_depth"],
        learning_rate=gbm["learning_rate"], min_child_samples=gbm["min_samples_leaf"], random_state=0, verbose=-1)


def fit_gbm(x, y, validation, gbm, own_defaults):
    """dc-model's fit_gbm: hold the `validation` positions back and keep the tree count with the lowest
    loss on them, stopping after n_iter_no_change rounds without a lower one (only with dc-model's trees)."""
    model = bench_gbm(gbm, own_defaults)
    if validation is None or own_defaults:
        return model.fit(x, y)
    fit = np.setdiff1d(np.arange(len(y)), validation)
    return model.fit(x[fit], y[fit], eval_set=[(x[validation], y[validation])], eval_metric="l2",
                     callbacks=[lightgbm.early_stopping(gbm["n_iter_no_change"], verbose=False)])


def pipeline(x, y, plan, layer, own_defaults):
    """What `dc-model rank --layer all` fits on one layer or, with `layer` False, on all of them (the stack
    model), on the rows the plan gives: for a layer, correlations, PCA, LassoCV over the same alphas and
    folds; for both, a GBM with mean |SHAP| on the same test rows, and per fold a GBM scored on the held-out
    rows (for a layer also its SHAP on the same rows, for the ranking's stability, and a Lasso at the chosen
    alpha). Returns the held-out R² values."""
    train, test = np.array(plan["train"]), np.array(plan["test"])
    xt, xh, yt, yh = x[train], x[test], y[train], y[test]
    gbm_params = plan["gbm"]
    folds = [(np.array(f["fit"]), np.array(f["held"])) for f in plan["folds"]]
    out = {}
    if layer:
        np.corrcoef(np.column_stack([xt, yt]), rowvar=False)
        scipy.stats.spearmanr(np.column_stack([xt, yt]))
        PCA(n_components=x.shape[1]).fit(StandardScaler().fit_transform(xt))
        scaler = StandardScaler().fit(xt)
        lasso = LassoCV(alphas=plan["lasso_alphas"], eps=1e-3, cv=folds, n_jobs=-1).fit(scaler.transform(xt), yt)
        out["lasso_test_r2"] = float(lasso.score(scaler.transform(xh), yh))
    gbm = fit_gbm(xt, yt, plan["validation"], gbm_params, own_defaults)
    gbm.predict(xh[plan["shap"]], pred_contrib=True)
    out["gbm_test_r2"] = float(r2_score(yh, gbm.predict(xh)))
    cv = []
    for f, (fit, held) in zip(plan["folds"], folds):
        model = fit_gbm(xt[fit], yt[fit], f["validation"], gbm_params, own_defaults)
        cv.append(r2_score(yt[held], model.predict(xt[held])))
        if layer:
            model.predict(xt[held][f["shap"]], pred_contrib=True)
            scaler = StandardScaler().fit(xt[fit])
            Lasso(alpha=lasso.alpha_).fit(scaler.transform(xt[fit]), yt[fit]).predict(scaler.transform(xt[held]))
    out["gbm_cv_r2_mean"] = float(np.mean(cv))
    return out


def bench(path, plan_path, own_defaults=False):
    """The LightGBM + scikit-learn pipeline doing what `dc-model rank --layer all` does: each layer, then all
    of them, on the rows of the plan dc-model-bench writes beside the CSV (`--lightgbm-defaults`: LightGBM
    with its own trees, without early stopping)."""
    with open(path) as f:
        header = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    p = header.index("y")
    x_all, y = data[:, :p], data[:, p]
    plan = json.loads(Path(plan_path).read_text())
    layers = {}
    for j, name in enumerate(header[:p]):
        layers.setdefault(name.split("::")[0], []).append(j)
    start = time.perf_counter()
    out = {layer: pipeline(x_all[:, cols], y, plan, True, own_defaults) for layer, cols in layers.items()}
    out["stack"] = pipeline(x_all, y, plan, False, own_defaults)
    print(json.dumps({"seconds": time.perf_counter() - start, "layers": out, "sklearn": sklearn.__version__,
                      "lightgbm": lightgbm.__version__}))


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "fixtures":
        synthetic()
    elif len(sys.argv) == 3 and sys.argv[1] == "expect":
        expect(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "quality":
        quality(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "forest":
        forest(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "bench":
        bench(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "bench" and sys.argv[4] == "--lightgbm-defaults":
        bench(sys.argv[2], sys.argv[3], own_defaults=True)
    else:
        sys.exit(__doc__)

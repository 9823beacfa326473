"""Keras 2 models in scikit-learn, in the style of the 2016-2018 blog tutorials ("Use Keras Deep Learning
Models with Scikit-Learn in Python", "Multi-Class Classification Tutorial with the Keras Deep Learning
Library"): KerasClassifier(build_fn=..., epochs, batch_size, verbose=0) with StratifiedKFold +
cross_val_score, a Pipeline with StandardScaler, GridSearchCV over build_fn arguments and fit arguments,
and KerasRegressor; on the iris data set shipped with scikit-learn.

NOT checked on real Keras 2.3.1: the side venv with Keras 2.3.1 (scripts/setup-keras2-venv.sh) has no
scikit-learn (a reason outside the script).
"""
import numpy as np
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import LabelEncoder, StandardScaler

from arignote.layers import Dense
from arignote.models import Sequential
from arignote.utils import np_utils
from arignote.wrappers.scikit_learn import KerasClassifier, KerasRegressor

seed = 7
np.random.seed(seed)

iris = load_iris()
X = iris.data.astype('float32')
names = np.array(iris.target_names)[iris.target]  # string labels, as read from the CSV in the tutorials

# encode class values as integers, then as one-hot vectors
encoder = LabelEncoder()
encoder.fit(names)
encoded_Y = encoder.transform(names)
dummy_y = np_utils.to_categorical(encoded_Y)
assert dummy_y.shape == (150, 3)


def baseline_model(units=8, optimizer='adam'):
    model = Sequential()
    model.add(Dense(units, input_dim=4, activation='relu'))
    model.add(Dense(3, activation='softmax'))
    model.compile(loss='categorical_crossentropy', optimizer=optimizer, metrics=['accuracy'])
    return model


estimators = [('standardize', StandardScaler()),
              ('mlp', KerasClassifier(build_fn=baseline_model, epochs=60, batch_size=10, verbose=0))]
pipeline = Pipeline(estimators)
kfold = StratifiedKFold(n_splits=3, shuffle=True, random_state=seed)
results = cross_val_score(pipeline, X, encoded_Y, cv=kfold)
print(f'Standardized: {results.mean() * 100:.2f}% ({results.std() * 100:.2f}%)')
assert results.shape == (3,) and results.mean() > 0.8, results

# one-hot targets work as well (the wrapper turns them back into classes)
estimator = KerasClassifier(build_fn=baseline_model, epochs=60, batch_size=10, verbose=0)
scaled = StandardScaler().fit_transform(X)
estimator.fit(scaled, dummy_y)
pred = estimator.predict(scaled)
proba = estimator.predict_proba(scaled)
assert pred.shape == (150,) and proba.shape == (150, 3)
np.testing.assert_allclose(proba.sum(axis=1), 1, rtol=1e-5)
assert (pred == encoded_Y).mean() > 0.85
print(encoder.inverse_transform(pred[:5]))

# grid search over the model's and fit's arguments
model = KerasClassifier(build_fn=baseline_model, verbose=0)
param_grid = dict(units=[4, 8], epochs=[30], batch_size=[10, 30])
grid = GridSearchCV(estimator=model, param_grid=param_grid, cv=3)
grid_result = grid.fit(scaled, encoded_Y)
print(f'Best: {grid_result.best_score_:f} using {grid_result.best_params_}')
means = grid_result.cv_results_['mean_test_score']
assert len(means) == 4 and grid_result.best_score_ == max(means)
assert set(grid_result.best_params_) == {'units', 'epochs', 'batch_size'}
assert grid_result.best_score_ > 0.7, grid_result.best_score_


# a regressor: predict petal width from the other three measurements
def regression_model():
    model = Sequential()
    model.add(Dense(8, input_dim=3, kernel_initializer='normal', activation='relu'))
    model.add(Dense(1, kernel_initializer='normal'))
    model.compile(loss='mean_squared_error', optimizer='adam')
    return model


Xr, yr = StandardScaler().fit_transform(X[:, :3]), X[:, 3]
regressor = KerasRegressor(build_fn=regression_model, epochs=60, batch_size=10, verbose=0)
scores = cross_val_score(regressor, Xr, yr, cv=KFold(n_splits=3, shuffle=True, random_state=seed))
print(f'Regression: {-scores.mean():.3f} ({scores.std():.3f}) MSE')
assert -scores.mean() < 0.15, scores  # the variance of petal width is 0.58
print('OK sklearn_wrapper', results.mean(), -scores.mean())

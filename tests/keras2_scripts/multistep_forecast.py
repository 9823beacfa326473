"""Multi-step time-series forecasting with an encoder-decoder LSTM, in the style of the 2018-2019 blog
tutorials ("How to Develop LSTM Models for Multi-Step Time Series Forecasting of Household Power
Consumption", "Multi-step Time Series Forecasting with Long Short-Term Memory Networks in Python"):
MinMaxScaler(feature_range=(0, 1)) from scikit-learn with fit_transform on the training part only,
to_supervised(train, n_input, n_out) sliding windows, LSTM(.., activation='relu', input_shape=
(n_timesteps, n_features)) + RepeatVector(n_outputs) + LSTM(.., activation='relu',
return_sequences=True) + TimeDistributed(Dense(.., activation='relu')) + TimeDistributed(Dense(1)),
train_y reshaped to (samples, n_out, 1), fit(epochs, batch_size, verbose=0), a walk-forward
forecast(model, history, n_input) of one week at a time, scaler.inverse_transform and
evaluate_forecasts' per-day RMSE (sqrt(mean_squared_error)) against a constant forecast (the
training mean; a persistence forecast, last week again, wins on this strongly weekly series).

The daily series (two features: the target with a weekly cycle and a trend, and a temperature-like
driver) is made up by the script. The Keras 2.3.1 side venv has no scikit-learn: there the script
uses a MinMaxScaler with the same arithmetic written inline (and runs the same assertions).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
from math import sqrt

import numpy as np
from numpy import array

from arignote.layers import LSTM, Dense, RepeatVector, TimeDistributed
from arignote.models import Sequential

try:
    from sklearn.metrics import mean_squared_error
    from sklearn.preprocessing import MinMaxScaler
except ImportError:  # the Keras 2.3.1 side venv: the same arithmetic as scikit-learn's
    def mean_squared_error(a, b):
        return float(np.mean((np.asarray(a) - np.asarray(b)) ** 2))

    class MinMaxScaler:
        def __init__(self, feature_range=(0, 1)):
            self.feature_range = feature_range

        def fit(self, X):
            lo, hi = self.feature_range
            self.data_min_, self.data_max_ = X.min(axis=0), X.max(axis=0)
            self.scale_ = (hi - lo) / (self.data_max_ - self.data_min_)
            self.min_ = lo - self.data_min_ * self.scale_
            return self

        def transform(self, X):
            return X * self.scale_ + self.min_

        def fit_transform(self, X):
            return self.fit(X).transform(X)

        def inverse_transform(self, X):
            return (X - self.min_) / self.scale_

np.random.seed(2)
days = 7 * 60
t = np.arange(days)
temperature = 15 + 10 * np.sin(2 * np.pi * t / 365.) + np.random.randn(days)
weekly = np.array([1.0, 0.9, 0.9, 0.95, 1.0, 1.4, 1.5])[t % 7]
power = 1500 * weekly + 8 * (20 - temperature) + 0.2 * t + 40 * np.random.randn(days)
dataset = np.column_stack([power, temperature]).astype('float32')

# split into standard weeks: 52 weeks of training, the rest for the walk-forward test
train, test = dataset[:7 * 52], dataset[7 * 52:]
scaler = MinMaxScaler(feature_range=(0, 1))
train_scaled = scaler.fit_transform(train)
test_scaled = scaler.transform(test)
assert abs(train_scaled.min()) < 1e-6 and abs(train_scaled.max() - 1) < 1e-6
train_w = array(np.split(train_scaled, len(train_scaled) / 7))
test_w = array(np.split(test_scaled, len(test_scaled) / 7))
print(train_w.shape, test_w.shape)


# convert history into inputs and outputs
def to_supervised(train, n_input, n_out=7):
    # flatten data
    data = train.reshape((train.shape[0] * train.shape[1], train.shape[2]))
    X, y = list(), list()
    in_start = 0
    # step over the entire history one time step at a time
    for _ in range(len(data)):
        # define the end of the input sequence
        in_end = in_start + n_input
        out_end = in_end + n_out
        # ensure we have enough data for this instance
        if out_end <= len(data):
            X.append(data[in_start:in_end, :])
            y.append(data[in_end:out_end, 0])
        # move along one time step
        in_start += 1
    return array(X), array(y)


# train the model
def build_model(train, n_input):
    # prepare data
    train_x, train_y = to_supervised(train, n_input)
    # define parameters
    verbose, epochs, batch_size = 0, 30, 16
    n_timesteps, n_features, n_outputs = train_x.shape[1], train_x.shape[2], train_y.shape[1]
    # reshape output into [samples, timesteps, features]
    train_y = train_y.reshape((train_y.shape[0], train_y.shape[1], 1))
    # define model
    model = Sequential()
    model.add(LSTM(32, activation='relu', input_shape=(n_timesteps, n_features)))
    model.add(RepeatVector(n_outputs))
    model.add(LSTM(32, activation='relu', return_sequences=True))
    model.add(TimeDistributed(Dense(16, activation='relu')))
    model.add(TimeDistributed(Dense(1)))
    model.compile(loss='mse', optimizer='adam')
    # fit network
    history = model.fit(train_x, train_y, epochs=epochs, batch_size=batch_size, verbose=verbose)
    return model, history


# make a forecast
def forecast(model, history, n_input):
    # flatten data
    data = array(history)
    data = data.reshape((data.shape[0] * data.shape[1], data.shape[2]))
    # retrieve last observations for input data
    input_x = data[-n_input:, :]
    # reshape into [1, n_input, n]
    input_x = input_x.reshape((1, input_x.shape[0], input_x.shape[1]))
    # forecast the next week
    yhat = model.predict(input_x, verbose=0)
    # we only want the vector forecast
    yhat = yhat[0]
    return yhat


def evaluate_forecasts(actual, predicted):
    scores = list()
    # calculate an RMSE score for each day
    for i in range(actual.shape[1]):
        mse = mean_squared_error(actual[:, i], predicted[:, i])
        rmse = sqrt(mse)
        scores.append(rmse)
    # calculate overall RMSE
    s = 0
    for row in range(actual.shape[0]):
        for col in range(actual.shape[1]):
            s += (actual[row, col] - predicted[row, col]) ** 2
    score = sqrt(s / (actual.shape[0] * actual.shape[1]))
    return score, scores


def unscale(values):
    # inverse_transform needs every feature column: put the target in column 0
    padded = np.zeros((len(values), 2), dtype='float32')
    padded[:, 0] = values
    return scaler.inverse_transform(padded)[:, 0]


n_input = 14
model, history = build_model(train_w, n_input)
assert model.output_shape == (None, 7, 1), model.output_shape
assert history.history['loss'][-1] < 0.5 * history.history['loss'][0], history.history['loss']

# walk-forward validation over each week
history_weeks = [x for x in train_w]
predictions, baseline = list(), list()
for i in range(len(test_w)):
    yhat_sequence = forecast(model, history_weeks, n_input)
    assert yhat_sequence.shape == (7, 1)
    predictions.append(unscale(yhat_sequence[:, 0]))
    baseline.append(np.full(7, train[:, 0].mean()))  # the training mean, every day
    # get real observation and add to history for predicting the next week
    history_weeks.append(test_w[i, :])
predictions, baseline = array(predictions), array(baseline)
actual = test[:, 0].reshape(len(test_w), 7)
np.testing.assert_allclose(unscale(test_w[:, :, 0].reshape(-1)), test[:, 0], rtol=1e-4)
score, scores = evaluate_forecasts(actual, predictions)
base_score, _ = evaluate_forecasts(actual, baseline)
print('lstm: [%.3f] %s' % (score, ', '.join(['%.1f' % s for s in scores])))
print('training mean: [%.3f]' % base_score)
assert len(scores) == 7
assert score < 0.75 * base_score, (score, base_score)
print('OK multistep_forecast')

"""A stateful LSTM on a univariate time series in the style of the 2017 blog tutorials ("Time Series
Prediction with LSTM Recurrent Neural Networks in Python with Keras"): a look-back window,
batch_input_shape=(1, look_back, 1), stateful=True, a manual epoch loop of fit(shuffle=False) and
reset_states(), predict(batch_size=1).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import math

import numpy as np

from arignote.layers import LSTM, Dense
from arignote.models import Sequential

np.random.seed(7)


def create_dataset(dataset, look_back=1):
    dataX, dataY = [], []
    for i in range(len(dataset) - look_back - 1):
        a = dataset[i:(i + look_back), 0]
        dataX.append(a)
        dataY.append(dataset[i + look_back, 0])
    return np.array(dataX), np.array(dataY)


# a seasonal series with a trend, scaled to [0, 1] by hand (MinMaxScaler-style)
t = np.arange(96, dtype='float32')
series = 10 + 0.05 * t + 3 * np.sin(2 * np.pi * t / 12)
dataset = ((series - series.min()) / (series.max() - series.min())).reshape(-1, 1).astype('float32')

train_size = int(len(dataset) * 0.67)
train, test = dataset[0:train_size, :], dataset[train_size:len(dataset), :]
look_back = 3
trainX, trainY = create_dataset(train, look_back)
testX, testY = create_dataset(test, look_back)
trainX = np.reshape(trainX, (trainX.shape[0], trainX.shape[1], 1))
testX = np.reshape(testX, (testX.shape[0], testX.shape[1], 1))

batch_size = 1
model = Sequential()
model.add(LSTM(4, batch_input_shape=(batch_size, look_back, 1), stateful=True))
model.add(Dense(1))
model.compile(loss='mean_squared_error', optimizer='adam')


def rmse(x, y):
    p = model.predict(x, batch_size=batch_size)
    model.reset_states()
    return math.sqrt(np.mean((p[:, 0] - y) ** 2)), p


before, _ = rmse(trainX, trainY)
for _ in range(60):
    model.fit(trainX, trainY, epochs=1, batch_size=batch_size, verbose=0, shuffle=False)
    model.reset_states()

trainScore, trainPredict = rmse(trainX, trainY)
testScore, testPredict = rmse(testX, testY)
print(f'Train Score: {trainScore:.3f} RMSE (before {before:.3f})')
print(f'Test Score: {testScore:.3f} RMSE')
assert trainPredict.shape == (len(trainX), 1) and testPredict.shape == (len(testX), 1)
assert trainScore < before * 0.6, (before, trainScore)
assert trainScore < 0.7 * trainY.std(), (trainScore, trainY.std())  # better than predicting the mean

# the state carries over between calls until reset_states()
lstm = model.layers[0]
one = trainX[:1]
first = model.predict(one, batch_size=1)
second = model.predict(one, batch_size=1)
model.reset_states()
third = model.predict(one, batch_size=1)
assert not np.allclose(first, second), (first, second)
np.testing.assert_allclose(first, third, rtol=1e-5, atol=1e-6)
assert lstm.stateful and len(lstm.states) == 2
print('OK stateful_lstm', trainScore, testScore)

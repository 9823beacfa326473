"""LSTM time-series regression with a look-back window, in the style of the most-copied 2016-2018 blog
tutorial ("Time Series Prediction with LSTM Recurrent Neural Networks in Python with Keras", the
airline passengers data): a MinMaxScaler(feature_range=(0, 1)) done by hand, create_dataset(dataset,
look_back), the window given three ways (as features: [samples, 1, look_back]; as time steps:
[samples, look_back, 1]; stacked LSTMs with return_sequences=True), train/test RMSE after inverting
the scaling, and the predictions shifted into an empty-NaN array for plotting.

The monthly series (trend + yearly season + noise, 10 years) is made up by the script.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py (the
one-step LSTM of the first model runs through Theano's scan there: Theano refuses to unroll one step).
"""
import math

import numpy

from arignote.layers import LSTM, Dense
from arignote.models import Sequential

numpy.random.seed(7)

# load the dataset: 120 monthly values
months = numpy.arange(120)
passengers = 120 + 2.0 * months + 40 * numpy.sin(2 * numpy.pi * months / 12) + numpy.random.normal(0, 5, 120)
dataset = passengers.reshape(-1, 1).astype('float32')

# normalize the dataset (MinMaxScaler(feature_range=(0, 1)) by hand, fitted on the whole series)
data_min, data_max = dataset.min(axis=0), dataset.max(axis=0)


def scale(a):
    return (a - data_min) / (data_max - data_min)


def inverse_transform(a):
    return a * (data_max - data_min) + data_min


dataset = scale(dataset)
assert dataset.min() == 0 and dataset.max() == 1

# split into train and test sets
train_size = int(len(dataset) * 0.67)
test_size = len(dataset) - train_size
train, test = dataset[0:train_size, :], dataset[train_size:len(dataset), :]
print(len(train), len(test))


# convert an array of values into a dataset matrix
def create_dataset(dataset, look_back=1):
    dataX, dataY = [], []
    for i in range(len(dataset) - look_back - 1):
        a = dataset[i:(i + look_back), 0]
        dataX.append(a)
        dataY.append(dataset[i + look_back, 0])
    return numpy.array(dataX), numpy.array(dataY)


look_back = 12
trainX, trainY = create_dataset(train, look_back)
testX, testY = create_dataset(test, look_back)


def run(model, trainX, testX, epochs, drop):
    model.compile(loss='mean_squared_error', optimizer='adam')
    history = model.fit(trainX, trainY, epochs=epochs, batch_size=4, verbose=0)
    trainPredict = model.predict(trainX)
    testPredict = model.predict(testX)
    assert trainPredict.shape == (len(trainX), 1) and testPredict.shape == (len(testX), 1)
    # invert predictions
    trainPredict = inverse_transform(trainPredict)
    testPredict = inverse_transform(testPredict)
    trainScore = math.sqrt(numpy.mean((inverse_transform(trainY) - trainPredict[:, 0]) ** 2))
    testScore = math.sqrt(numpy.mean((inverse_transform(testY) - testPredict[:, 0]) ** 2))
    print('Train Score: %.2f RMSE' % (trainScore))
    print('Test Score: %.2f RMSE' % (testScore))
    losses = history.history['loss']
    assert len(losses) == epochs and all(numpy.isfinite(losses)), losses
    assert losses[-1] < losses[0] * drop, losses
    return trainPredict, testPredict, trainScore, testScore


spread = float(inverse_transform(trainY).std())  # predicting the mean scores this RMSE

# 1. the window as features: [samples, time steps = 1, features = look_back]
model = Sequential()
model.add(LSTM(8, input_shape=(1, look_back)))
model.add(Dense(1))
trainPredict, testPredict, trainScore, testScore = run(
    model, numpy.reshape(trainX, (trainX.shape[0], 1, trainX.shape[1])),
    numpy.reshape(testX, (testX.shape[0], 1, testX.shape[1])), epochs=40, drop=0.2)
assert trainScore < 0.35 * spread, (trainScore, spread)

# shift train and test predictions for plotting
trainPredictPlot = numpy.empty_like(dataset)
trainPredictPlot[:, :] = numpy.nan
trainPredictPlot[look_back:len(trainPredict) + look_back, :] = trainPredict
testPredictPlot = numpy.empty_like(dataset)
testPredictPlot[:, :] = numpy.nan
testPredictPlot[len(trainPredict) + (look_back * 2) + 1:len(dataset) - 1, :] = testPredict
assert numpy.isfinite(trainPredictPlot).sum() == len(trainPredict)
assert numpy.isfinite(testPredictPlot).sum() == len(testPredict)

# 2. the window as time steps: [samples, time steps = look_back, features = 1]
trainX3 = numpy.reshape(trainX, (trainX.shape[0], trainX.shape[1], 1))
testX3 = numpy.reshape(testX, (testX.shape[0], testX.shape[1], 1))
model = Sequential()
model.add(LSTM(8, input_shape=(look_back, 1)))
model.add(Dense(1))
_, _, trainScore2, testScore2 = run(model, trainX3, testX3, epochs=30, drop=0.5)
assert trainScore2 < 0.8 * spread, (trainScore2, spread)

# 3. stacked LSTMs: the first returns the whole sequence
model = Sequential()
model.add(LSTM(8, input_shape=(look_back, 1), return_sequences=True))
model.add(LSTM(8))
model.add(Dense(1))
assert model.layers[0].output_shape == (None, look_back, 8), model.layers[0].output_shape
assert model.layers[1].output_shape == (None, 8)
assert model.count_params() == 4 * (8 * (1 + 8) + 8) + 4 * (8 * (8 + 8) + 8) + 9
_, _, trainScore3, testScore3 = run(model, trainX3, testX3, epochs=30, drop=0.5)
assert trainScore3 < 0.8 * spread, (trainScore3, spread)
print('OK lstm_window', spread, trainScore, trainScore2, trainScore3)

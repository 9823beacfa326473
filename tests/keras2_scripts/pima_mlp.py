"""A first multilayer perceptron on a CSV table, the way the most-copied 2016-2019 beginner tutorials
("Develop Your First Neural Network in Python With Keras Step-By-Step", the Pima Indians diabetes
data) wrote it: numpy.loadtxt of a comma-separated file, X = dataset[:, 0:8], Y = dataset[:, 8],
Dense(12, input_dim=8, kernel_initializer='uniform', activation='relu'), Dense(8), a sigmoid output,
binary_crossentropy + adam + metrics=['accuracy'], fit(epochs, batch_size=10), model.evaluate and
"%s: %.2f%%" % (model.metrics_names[1], scores[1]*100), predictions rounded with round() and with
predict_classes, and a validation_split run plotted (here: read) from history.history['acc'].

The table is written by the script (8 features of a made-up screening data set, a label that depends
on four of them), so nothing is downloaded. The 2016 versions used init='uniform' and nb_epoch=150
(Keras 1); this script uses the Keras 2 names kernel_initializer and epochs.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy

from arignote.layers import Dense
from arignote.models import Sequential

# fix random seed for reproducibility
seed = 7
numpy.random.seed(seed)

# write the CSV the tutorial would have downloaded: 8 measurements and a 0/1 outcome per row
rng = numpy.random.RandomState(0)
n = 500
pregnancies = rng.poisson(3, n)
glucose = rng.normal(120, 30, n).clip(40, 200)
pressure = rng.normal(70, 12, n).clip(30, 120)
skin = rng.normal(20, 10, n).clip(0, 60)
insulin = rng.normal(80, 60, n).clip(0, 400)
bmi = rng.normal(32, 7, n).clip(15, 60)
pedigree = rng.gamma(2, 0.25, n)
age = rng.randint(21, 70, n)
risk = 0.05 * (glucose - 120) + 0.15 * (bmi - 32) + 0.04 * (age - 35) + 1.2 * (pedigree - 0.5)
outcome = (risk + rng.normal(0, 0.7, n) > 0).astype(int)
table = numpy.column_stack([pregnancies, glucose, pressure, skin, insulin, bmi, pedigree, age, outcome])
numpy.savetxt('pima-indians-diabetes.csv', table, delimiter=',', fmt='%.3f')

# load pima indians dataset
dataset = numpy.loadtxt("pima-indians-diabetes.csv", delimiter=",")
# split into input (X) and output (Y) variables
X = dataset[:, 0:8]
Y = dataset[:, 8]
# the tutorials' follow-up post: scale the inputs, raw glucose/insulin values saturate a uniform-init net
X = (X - X.mean(axis=0)) / X.std(axis=0)

# create model
model = Sequential()
model.add(Dense(12, input_dim=8, kernel_initializer='uniform', activation='relu'))
model.add(Dense(8, kernel_initializer='uniform', activation='relu'))
model.add(Dense(1, kernel_initializer='uniform', activation='sigmoid'))

# Compile model
model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
before = model.evaluate(X, Y, verbose=0)

# Fit the model
history = model.fit(X, Y, epochs=30, batch_size=10, verbose=0)

# evaluate the model
scores = model.evaluate(X, Y)
print("\n%s: %.2f%%" % (model.metrics_names[1], scores[1] * 100))
assert model.metrics_names == ['loss', 'accuracy'], model.metrics_names
assert sorted(history.history) == ['accuracy', 'loss'], history.history.keys()
assert len(history.history['loss']) == 30
assert history.history['loss'][-1] < history.history['loss'][0]
assert scores[0] < before[0] and scores[1] > 0.8, (before, scores)

# calculate predictions
predictions = model.predict(X)
assert predictions.shape == (n, 1) and predictions.dtype == numpy.float32
assert ((predictions >= 0) & (predictions <= 1)).all()
# round predictions
rounded = [round(x[0]) for x in predictions]
print(rounded[:10])
classes = model.predict_classes(X)
assert classes.shape == (n, 1) and classes.dtype.kind == 'i', (classes.shape, classes.dtype)
numpy.testing.assert_array_equal(classes[:, 0], numpy.array(rounded))
acc = (classes[:, 0] == Y).mean()
assert abs(acc - scores[1]) < 1e-6, (acc, scores)
proba = model.predict_proba(X)
numpy.testing.assert_allclose(proba, predictions, rtol=1e-6)

# the "plot the history" follow-up: metrics=['acc'] and validation_split, keys read for matplotlib
model = Sequential()
model.add(Dense(12, input_dim=8, kernel_initializer='uniform', activation='relu'))
model.add(Dense(8, kernel_initializer='uniform', activation='relu'))
model.add(Dense(1, kernel_initializer='uniform', activation='sigmoid'))
model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['acc'])
history = model.fit(X, Y, validation_split=0.33, epochs=20, batch_size=10, verbose=0)
print(history.history.keys())
assert sorted(history.history) == ['acc', 'loss', 'val_acc', 'val_loss'], history.history.keys()
assert history.params['epochs'] == 20 and history.epoch == list(range(20))
# Keras cuts at int(500 * (1. - 0.33)) = 334 (0.67 is not exact in binary): the head trains,
# the tail validates
assert history.params['samples'] == 334, history.params
assert history.history['acc'][-1] > history.history['acc'][0]
assert history.history['val_acc'][-1] > 0.7, history.history['val_acc']
# the validation split is the tail, unshuffled: evaluating on it gives the last val_loss
last = model.evaluate(X[334:], Y[334:], verbose=0)
numpy.testing.assert_allclose(last[0], history.history['val_loss'][-1], rtol=1e-4)
print('OK pima_mlp', scores)

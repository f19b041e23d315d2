"""G2TAM on real video: NanoTrack's appearance memory and the real-perception backbone's 3D memory, a learned
presence head that says when the object is out of view or hidden, and re-acquisition guided by the 3D memory."""

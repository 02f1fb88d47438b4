mod localize;

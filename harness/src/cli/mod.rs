//! Every command's arguments (filled in below).

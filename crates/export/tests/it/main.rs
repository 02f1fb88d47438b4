mod fixtures;
mod qa;
mod scene_graphs;
mod speed;

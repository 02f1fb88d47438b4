mod fixtures;
mod scene_graphs;
mod speed;

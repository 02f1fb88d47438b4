mod fixtures;
mod qa;
mod release;
mod scene_graphs;
mod speed;

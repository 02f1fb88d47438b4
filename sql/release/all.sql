-- all: every QA pair, every image (the release's root qa.zip and metadata/).
SELECT * FROM release_candidates

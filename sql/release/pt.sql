-- PT, pre-training grade (exports/B_frontal): rating B or better, frontal images only.
SELECT * FROM release_candidates WHERE rating >= 'B'

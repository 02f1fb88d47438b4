-- FT, fine-tuning grade (exports/A_frontal): rating A or better, frontal images only.
SELECT * FROM release_candidates WHERE rating >= 'A'

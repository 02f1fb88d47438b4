-- The scene graphs of the release's studies, without the per-image entries of other images
-- (observation, region and indication localizations, study_img_localization_quality), with
-- the study's split.
SELECT g.patient_id, g.study_id, g.sentences,
       keep_images(g.observations, s.image_ids) AS observations,
       g.top_level_obs_ids,
       keep_images(g.regions, s.image_ids) AS regions,
       keep_images(g.indication, s.image_ids) AS indication,
       g.located_at_relations, g.obs_relations, g.obs_sent_relations, g.region_region_relations,
       g.study_quality,
       keep_images(g.study_img_localization_quality, s.image_ids) AS study_img_localization_quality,
       g.extractor, g.embedder, s.split
FROM scene_graphs g JOIN release_studies s ON g.study_id = s.study_id
ORDER BY g.study_id

-- GEMeX question and reason lengths in words per split and question type (paper 004, figure 6).
SELECT split,
       question_type,
       count(*) AS questions,
       round(avg(array_length(string_to_array(question, ' '))), 1) AS question_words,
       round(avg(array_length(string_to_array(reason, ' '))), 1) AS reason_words,
       min(array_length(string_to_array(reason, ' '))) AS reason_min,
       max(array_length(string_to_array(reason, ' '))) AS reason_max
FROM gemex_qa
GROUP BY split, question_type
ORDER BY split, question_type

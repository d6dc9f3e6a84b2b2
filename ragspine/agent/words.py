"""Per-language word lists the question reading decides boundaries with (pure data).

A glossary form found in a question names its term only where it stands as a term of its own:
the words around it are function words, other glossary hits, a period, or words that leave the
term's meaning alone (``revenue figure``, ``売上高の推移``, ``营收情况``). Any other word joined
to it makes a longer term the glossary does not know (``cost of sales``, ``core inflation``,
``inflation expectations``, 劳动人口, 自己資本, 売上原価): that is not the metric, and the
reading says so instead of answering another fact.

The lists are deliberately about grammar (articles, prepositions, auxiliaries, question words,
verbs of change, particles), not about any glossary: they generalize to a user's own terms.
"""

from __future__ import annotations

#: English words that may stand right before a metric form without changing what it names.
EN_BEFORE = frozenset("""
a an the this that these those its it's their his her our my your whose which what whats what's was were is are be been
did do does done has have had how much many show tell give me us report reported reports find get got see say said list
and or but about for on at by with from to as than vs versus per of in during
total overall annual yearly quarterly monthly actual recorded stated official latest final full whole same
make made makes making earn earned book booked generate generated post posted record achieve achieved bring brought
deliver delivered reach reached see saw have having when where why who whom please
high low large big small
""".split())
#: English words that may follow a metric form (prepositions, auxiliaries, verbs of change in
#: forms that are not nouns, words that name the value itself).
EN_AFTER = frozenset("""
in for of at during on over across by from to between and or but as than vs versus compared according
was were is are be been being did do does has had have will would could should can may might
fell fallen falls falling dropped drops dropping declined declines declining decreased
decreases decreasing rose risen rises rising grew grown grows growing increased increases increasing
changed changes changing came comes stood stands ended ends reached reaches looked
amounted totaled totalled went moved shifted climbed slipped jumped
figure figures number numbers value values level levels data result results reading
when where why what which that who how then there here this these those it its so
""".split())
#: Verbs of change whose bare form is also a noun (``revenue growth`` is another metric): they
#: may follow a metric only when an auxiliary before it makes them a verb (``did revenue fall``).
EN_AFTER_VERBS = frozenset("""
fall drop decline decrease rise grow increase change come stand end reach look amount total go move shift climb slip jump
""".split())
EN_AUXILIARIES = frozenset("did do does will would could should can may might has have had".split())
#: English words that, right before ``of``/``in`` before a metric, leave it alone
#: (``the value of revenue``); any other word makes a longer term (``cost of sales``).
EN_HEAD_NEUTRAL = frozenset("""
value values figure figures number numbers level levels amount total data what which how much many all some most
terms term
""".split())
#: Prepositions that join a head noun to the metric after them (``cost of sales``, ``growth in revenue``).
EN_JOINERS = frozenset({"of", "in"})

#: Function words: a glossary form that folds to one of these names its term only where the
#: question writes it in capitals (``US`` the entity, never ``tell us``; ``IT``, ``OR``).
FUNCTION_WORDS = frozenset("""
a an the i me my we us our you your he him his she her it its they them their this that these those
am is are was were be been do does did has have had can could will would shall should may might must
in on at of to for by from with as or and but if so no not nor up out off all any each one
who what when where which why how us
""".split())

#: CJK morphemes that may stand right before a metric form (particles, copulas, demonstratives,
#: "total"); the text before the form must end with one of them.
CJK_BEFORE = (
    "的", "之", "是", "为", "為", "和", "与", "與", "及", "或", "其", "在", "了", "的总", "总", "總", "全部", "全年", "整体",
    "の", "は", "が", "を", "に", "で", "と", "も", "や", "へ", "から", "まで", "より", "全体", "合計", "総",
    "问", "請問", "请问", "查询", "查", "看",
)
#: CJK morphemes that may follow a metric form (particles, copulas, question words, verbs of
#: change, words naming the value itself).
CJK_AFTER = (
    "是", "为", "為", "有", "多", "在", "和", "与", "與", "及", "或", "吗", "嗎", "呢", "了", "达", "達", "约", "約",
    "怎", "如何", "为什么", "為什麼", "为何", "為何", "下降", "下滑", "下跌", "减少", "減少", "增长", "增長", "增加", "上升",
    "提高", "降低", "变化", "變化", "变动", "情况", "情況", "数据", "數據", "数字", "数值", "數值", "金额", "金額", "总额",
    "總額", "规模", "規模", "水平", "共", "合计", "大约", "多少", "几", "幾", "分别", "分別", "各", "各自", "それぞれ",
    "は", "が", "を", "に", "で", "と", "も", "や", "へ", "より", "って", "について", "だ", "で", "です", "でした",
    "いくら", "幾ら", "ど", "な", "減", "増", "低下", "上昇", "推移", "実績", "数値", "データ", "金額", "総額", "水準",
    "か", "？", "?", "。", "、", "，", ",", "！", "!", "；", ";", "：", ":",
)
#: Possessive links: after a metric they make the noun that follows the term asked about
#: (人口的增长率, 人口の増加率) unless that noun only names the value (:data:`CJK_NEUTRAL`).
CJK_LINKS = ("的", "之", "の")
CJK_NEUTRAL = ("数据", "數據", "数字", "数值", "數值", "金额", "金額", "总额", "總額", "总数", "總數", "情况", "情況", "规模",
               "規模", "水平", "値", "数値", "データ", "実績", "水準", "推移")
#: A CJK morpheme of :data:`CJK_AFTER` followed within two characters by one of these makes a
#: noun, not a verb: 增长率 (growth rate), 増加率, 下降幅度 — another metric.
CJK_NOUN_ENDINGS = "率额額幅速"
